import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { DataSource } from 'typeorm';
import { FINAL_STATES, providerIdCandidates, type DeliveryReceipt } from '../smpp/delivery-receipt.js';

export type ReceiptOutcome = 'applied' | 'ignored' | 'unmatched';

/** How long a receipt may wait for its message's provider id to be recorded (the two race after submit). */
const UNMATCHED_RETRIES = 10;
const UNMATCHED_RETRY_MS = 300;

/**
 * Applies delivery receipts to stored messages: status (the receipt's stat,
 * as sent), delivery time (its done date), error code (its err) and the time
 * this service recorded it. A non-final receipt never replaces a final status.
 */
@Injectable()
export class SmsReceiptsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('SmsReceipts');
  }

  async apply(provider: string, receipt: DeliveryReceipt): Promise<ReceiptOutcome> {
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.applyOnce(provider, receipt);
      if (outcome !== 'unmatched' || attempt >= UNMATCHED_RETRIES) {
        if (outcome === 'unmatched') {
          // Only the provider's id: the receipt's text may name the destination.
          this.logger.warn(
            { provider, providerMessageId: receipt.id },
            'delivery receipt for no known message',
          );
        }
        return outcome;
      }
      await new Promise((resolve) => setTimeout(resolve, UNMATCHED_RETRY_MS));
    }
  }

  private async applyOnce(provider: string, receipt: DeliveryReceipt): Promise<ReceiptOutcome> {
    const ids = providerIdCandidates(receipt.id);
    const [rows] = (await this.dataSource.query(
      `UPDATE sms_messages
          SET status = $3, error_code = $4, delivery_time = COALESCE($5, now()), system_delivery_time = now()
        WHERE provider = $1 AND provider_message_id = ANY($2::text[])
          AND NOT (status = ANY($6::text[]) AND NOT ($3 = ANY($6::text[])))
      RETURNING id`,
      [provider, ids, receipt.stat, receipt.err || null, receipt.doneDate ?? null, FINAL_STATES],
    )) as [{ id: string }[], number];
    if (rows.length > 0) {
      this.logger.info(
        { messageId: rows[0].id, status: receipt.stat, err: receipt.err },
        'SMS delivery receipt',
      );
      return 'applied';
    }
    const [known] = (await this.dataSource.query(
      `SELECT 1 FROM sms_messages WHERE provider = $1 AND provider_message_id = ANY($2::text[])`,
      [provider, ids],
    )) as unknown[];
    return known ? 'ignored' : 'unmatched';
  }
}
