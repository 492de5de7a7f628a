import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { SmsQueue, type SimulatedReceiptJob } from './sms-queue.js';
import type { OutgoingSms, SmsProvider, SubmitResult } from './sms-provider.port.js';
import { SmsReceiptsService } from './sms-receipts.service.js';
import { SMS_SIMULATOR_NUMBERS, SMS_SIMULATOR_UNDELIVERABLE_ERROR } from './sms-routing.js';

/**
 * The default provider: takes every message, assigns an id, and reports a
 * receipt after SMS_SIM_DELIVERY_DELAY_MS through a delayed job (so it
 * survives a restart): DELIVRD, or UNDELIV err 001 for the undeliverable test
 * number. Its no-route number never gets here (SmsRouting refuses it).
 */
@Injectable()
export class SmsSimulatorProvider implements SmsProvider {
  readonly name = 'simulator';

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: SmsQueue,
    private readonly receipts: SmsReceiptsService,
  ) {}

  async submit(sms: OutgoingSms): Promise<SubmitResult> {
    const providerMessageId = `sim-${randomUUID()}`;
    const undeliverable = sms.dnis === SMS_SIMULATOR_NUMBERS.undeliverable;
    await this.queue.enqueueSimulatedReceipt(
      {
        providerMessageId,
        stat: undeliverable ? 'UNDELIV' : 'DELIVRD',
        err: undeliverable ? SMS_SIMULATOR_UNDELIVERABLE_ERROR : '000',
      },
      this.config.mobile.smsSimDeliveryDelayMs,
    );
    return { accepted: true, providerMessageId };
  }

  /** The delayed receipt job: delivered (or not) now. */
  async report(job: SimulatedReceiptJob): Promise<void> {
    const outcome = await this.receipts.apply(this.name, {
      id: job.providerMessageId,
      stat: job.stat,
      err: job.err,
      doneDate: new Date(),
    });
    // The submit job records the provider id right after submit; with no delay the receipt may
    // come first, and the receipts service waits for it a little. Past that, retry the job.
    if (outcome === 'unmatched') throw new Error('simulated receipt for a message not recorded yet');
  }
}
