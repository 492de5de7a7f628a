import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { DataSource } from 'typeorm';
import { SMS_PROVIDER, type SmsProvider } from './sms-provider.port.js';
import { SMS_STATUS } from './sms-status.js';

export type DispatchOutcome = 'submitted' | 'rejected' | 'skipped';

/**
 * Hands one QUEUED message to the configured provider (worker side). While
 * the provider cannot take it the call throws and the job is retried: the
 * message stays QUEUED and is never lost. Once the provider has it, the text
 * is erased (the receipt needs only the provider's id).
 */
@Injectable()
export class SmsDispatchService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(SMS_PROVIDER) private readonly provider: SmsProvider,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('SmsDispatch');
  }

  async submit(messageId: string): Promise<DispatchOutcome> {
    const [rows] = (await this.dataSource.query(
      `UPDATE sms_messages SET attempts = attempts + 1
        WHERE id = $1 AND status = $2 AND body IS NOT NULL
      RETURNING dnis, body, attempts`,
      [messageId, SMS_STATUS.queued],
    )) as [{ dnis: string; body: string; attempts: number }[], number];
    const message = rows[0];
    if (!message) return 'skipped';
    const result = await this.provider.submit({ messageId, dnis: message.dnis, text: message.body });
    if (result.accepted) {
      await this.dataSource.query(
        `UPDATE sms_messages
            SET status = $2, provider = $3, provider_message_id = $4, submitted_at = now(), body = NULL
          WHERE id = $1 AND status = $5`,
        [messageId, SMS_STATUS.enroute, this.provider.name, result.providerMessageId, SMS_STATUS.queued],
      );
      this.logger.info(
        { messageId, provider: this.provider.name, providerMessageId: result.providerMessageId },
        'SMS submitted',
      );
      return 'submitted';
    }
    await this.dataSource.query(
      `UPDATE sms_messages
          SET status = $2, provider = $3, error_code = $4, submitted_at = now(), body = NULL,
              system_delivery_time = now()
        WHERE id = $1 AND status = $5`,
      [messageId, SMS_STATUS.rejected, this.provider.name, result.errorCode, SMS_STATUS.queued],
    );
    this.logger.warn({ messageId, provider: this.provider.name, errorCode: result.errorCode }, 'SMS refused');
    return 'rejected';
  }
}
