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
 * number. Its no-route number never gets here (SmsRouting refuses it). A
 * receipt whose job gave up (a database fault through its attempts) is
 * reported again by the sweeper (decision 0089); one message gets one final
 * status whichever copy comes first.
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
    await this.queue.enqueueSimulatedReceipt(
      this.receiptFor(sms.dnis, providerMessageId),
      this.config.mobile.smsSimDeliveryDelayMs,
    );
    return { accepted: true, providerMessageId };
  }

  /** The receipt the simulator reports for a message to `dnis` it gave `providerMessageId`. */
  receiptFor(dnis: string, providerMessageId: string): SimulatedReceiptJob {
    const undeliverable = dnis === SMS_SIMULATOR_NUMBERS.undeliverable;
    return {
      providerMessageId,
      stat: undeliverable ? 'UNDELIV' : 'DELIVRD',
      err: undeliverable ? SMS_SIMULATOR_UNDELIVERABLE_ERROR : '000',
    };
  }

  /**
   * The delayed receipt job (or the sweeper's copy of it): delivered (or not) now. The simulator has one final word
   * per message, so a receipt never replaces a final status: a second copy is ignored.
   */
  async report(job: SimulatedReceiptJob): Promise<void> {
    const outcome = await this.receipts.apply(
      this.name,
      { id: job.providerMessageId, stat: job.stat, err: job.err, doneDate: new Date() },
      'same',
      { keepsFinal: true },
    );
    // The submit job records the provider id right after submit; with no delay the receipt may
    // come first, and the receipts service waits for it a little. Past that, retry the job.
    if (outcome === 'unmatched') throw new Error('simulated receipt for a message not recorded yet');
  }
}
