import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { DataSource, type EntityManager } from 'typeorm';
import { SMS_PROVIDER, type SmsProvider } from './sms-provider.port.js';
import { SMS_STATUS } from './sms-status.js';
import { tryAgain } from '#common/async/try-again.js';
import { ADVISORY_LOCKS, lockUntilCommit } from '#common/database/advisory-locks.js';

export type DispatchOutcome = 'submitted' | 'rejected' | 'skipped';

/** Waits between tries to record an accepted SMS, doubling to 4 s. */
const RECORD_RETRY_DELAYS_MS = [100, 250, 500, 1_000, 2_000, 3_000, 4_000];
/**
 * No try starts later than this after the first (a try itself may wait for a connection up to 10 s): the whole
 * recording stays under a stopping worker's 25 s.
 */
const RECORD_RETRY_BUDGET_MS = 12_000;

/**
 * The provider id to store for an accepted message: as the provider gave it, or NULL when it is empty (an
 * SMSC's submit_sm_resp without a message_id). NULL matches no receipt and, unlike '', never meets the
 * unique index (provider, provider_message_id).
 */
export function storedProviderId(providerMessageId: string): string | null {
  return providerMessageId.trim() === '' ? null : providerMessageId;
}

/**
 * Hands one QUEUED message to the configured provider (worker side). While
 * the provider cannot take it the call throws and the job is retried: the
 * message stays QUEUED and is never lost. Once the provider has it, the text
 * is erased (the receipt needs only the provider's id), and the message is
 * recorded as sent whatever id the provider gave: an empty id is stored as
 * NULL, and an id the provider already gave another message moves to this one.
 * Nothing about the id can fail the job and send the message again.
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
      `UPDATE sms_messages SET attempts = attempts + 1, provider = $3
        WHERE id = $1 AND status = $2 AND body IS NOT NULL
      RETURNING dnis, body, attempts`,
      [messageId, SMS_STATUS.queued, this.provider.name],
    )) as [{ dnis: string; body: string; attempts: number }[], number];
    const message = rows[0];
    if (!message) return 'skipped';
    const result = await this.provider.submit({ messageId, dnis: message.dnis, text: message.body });
    if (result.accepted) {
      const provider = this.provider.name;
      const providerMessageId = storedProviderId(result.providerMessageId);
      const previous = await this.persistently(messageId, () =>
        this.dataSource.transaction((manager) => this.recordSubmitted(manager, messageId, providerMessageId)),
      );
      this.logger.info({ messageId, provider, providerMessageId }, 'SMS submitted');
      if (providerMessageId === null) {
        this.logger.warn(
          { messageId, provider },
          'SMS accepted with no message id from the provider: no delivery receipt can match it',
        );
      }
      for (const previousMessageId of previous) {
        this.logger.warn(
          { messageId, provider, providerMessageId, previousMessageId },
          'provider message id given again: it now names the newer message; receipts for the older one go to it',
        );
      }
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

  /**
   * Records what the provider already did, tried again in this process before the job fails: a failed job is
   * retried with the message still QUEUED and its text kept, and the retry sends the SMS again. A pool checkout
   * that timed out or a failover is over in seconds, so the job fails (and the SMS may go twice: decision 0010's
   * at-least-once) only when the database stays out of reach for {@link RECORD_RETRY_BUDGET_MS}.
   */
  private async persistently<T>(messageId: string, record: () => Promise<T>): Promise<T> {
    const started = Date.now();
    return tryAgain(record, RECORD_RETRY_DELAYS_MS, (error, attempt, delay) => {
      if (Date.now() + delay - started > RECORD_RETRY_BUDGET_MS) return false;
      this.logger.warn(
        { err: error, messageId, attempt },
        'could not record an SMS the provider accepted; trying again',
      );
      return true;
    });
  }

  /**
   * ENROUTE with the provider's id; returns the messages the id was taken from. An id that another message
   * of the provider holds (the SMSC's counter was reset or wrapped) is taken from it: the newest message
   * owns an id, and receipts for the older one can no longer be told apart. The advisory lock makes two
   * submits given the same id at once take turns, so the second sees the first's row and the unique index
   * is never met.
   */
  private async recordSubmitted(
    manager: EntityManager,
    messageId: string,
    providerMessageId: string | null,
  ): Promise<string[]> {
    const provider = this.provider.name;
    let older: { id: string }[] = [];
    if (providerMessageId !== null) {
      await lockUntilCommit(manager, ADVISORY_LOCKS.smsProviderId, `${provider}:${providerMessageId}`);
      [older] = (await manager.query(
        `UPDATE sms_messages SET provider_message_id = NULL
          WHERE provider = $1 AND provider_message_id = $2 AND id <> $3
            AND EXISTS (SELECT 1 FROM sms_messages WHERE id = $3 AND status = $4)
        RETURNING id`,
        [provider, providerMessageId, messageId, SMS_STATUS.queued],
      )) as [{ id: string }[], number];
    }
    await manager.query(
      `UPDATE sms_messages
          SET status = $2, provider = $3, provider_message_id = $4, submitted_at = now(), body = NULL
        WHERE id = $1 AND status = $5`,
      [messageId, SMS_STATUS.enroute, provider, providerMessageId, SMS_STATUS.queued],
    );
    return older.map(({ id }) => id);
  }
}
