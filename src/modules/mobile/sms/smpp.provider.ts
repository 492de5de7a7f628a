import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { SmppLink } from '../smpp/smpp-link.js';
import type { OutgoingSms, SmsProvider, SubmitResult } from './sms-provider.port.js';
import { SmsReceiptsService } from './sms-receipts.service.js';

/** How long a submit job waits for a link that is down before it is retried later. */
const LINK_WAIT_MS = 5_000;

/**
 * SMS over SMPP 3.4 (SMS_PROVIDER=smpp): one SmppLink per worker process,
 * bound from start-up to shutdown. Receipts arriving on it update the stored
 * messages. Inactive (no connection) when another provider is configured.
 */
@Injectable()
export class SmppSmsProvider implements SmsProvider, OnApplicationBootstrap, OnApplicationShutdown {
  readonly name = 'smpp';
  private link?: SmppLink;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly receipts: SmsReceiptsService,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('SmppProvider');
  }

  onApplicationBootstrap(): void {
    if (this.config.mobile.smsProvider !== 'smpp') return;
    const { smpp } = this.config.mobile;
    this.link = new SmppLink(
      { ...smpp },
      async (receipt) => {
        await this.receipts.apply(this.name, receipt, smpp.receiptIdForm);
      },
      (level, fields, message) =>
        this.logger[level]({ ...fields, host: smpp.host, port: smpp.port, systemId: smpp.systemId }, message),
    );
    this.link.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.link?.stop();
  }

  /** The running link (undefined when SMPP is not the configured provider). */
  get current(): SmppLink | undefined {
    return this.link;
  }

  async submit(sms: OutgoingSms): Promise<SubmitResult> {
    if (!this.link) throw new Error('the SMPP provider is not configured (SMS_PROVIDER)');
    const outcome = await this.link.submit(sms.dnis, sms.text, LINK_WAIT_MS);
    if (outcome.accepted) return { accepted: true, providerMessageId: outcome.providerMessageId };
    return {
      accepted: false,
      errorCode: `0x${outcome.commandStatus.toString(16).padStart(8, '0').toUpperCase()}`,
    };
  }
}
