import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { DataSource } from 'typeorm';
import {
  FINAL_STATES,
  providerIdCandidates,
  receiptProviderIds,
  replacesFinalStatus,
  setsDeliveryTime,
  type DeliveryReceipt,
  type ReceiptIdForm,
} from '../smpp/delivery-receipt.js';
import { SMS_STATUS } from './sms-status.js';

export type ReceiptOutcome = 'applied' | 'ignored' | 'unmatched';

/** A receipt that matched no message while a submission is still to be recorded: the SMSC should send it later. */
export class ReceiptTooEarlyError extends Error {
  constructor() {
    super(
      'delivery receipt for no recorded message while a submission is not recorded yet; asked again later',
    );
  }
}

/** How long a receipt may wait for its message's provider id to be recorded (the two race after submit). */
const UNMATCHED_RETRIES = 10;
const UNMATCHED_RETRY_MS = 300;
/** How recent a QUEUED message must be for an unmatched receipt to be asked for again (submissionsUnrecorded). */
const RECENT_SUBMISSION_MINUTES = 2;

/**
 * Applies delivery receipts to stored messages: status (the receipt's stat,
 * as sent), delivery time (the done date of a final DELIVRD receipt), error code (its err) and the time
 * this service recorded it. A final status is replaced only by a later final
 * receipt that is neither UNKNOWN nor an intermediate notification (replacesFinalStatus).
 */
@Injectable()
export class SmsReceiptsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('SmsReceipts');
  }

  /**
   * Looks for the message of the forms the receipt's id names under `idForm` (receiptProviderIds; SMPP_RECEIPT_ID_FORM
   * for SMPP, `same` for the simulator) while its recording may still be on its way (the receipt-before-record race):
   * {@link UNMATCHED_RETRIES} more tries, {@link UNMATCHED_RETRY_MS} apart. Then, while some submission to this
   * provider is still unrecorded, the SMSC is asked to send the receipt again (its message may be that one). Only
   * with `auto`, and only when none is, does it try the id's other forms (providerIdCandidates), and a message found
   * by one of them only while its status is not final (docs/decisions/0085).
   *
   * `keepsFinal`: the receipt never replaces a final status. For a provider that sends one final receipt per
   * message (the simulator), so that a second copy of it (its job and the sweeper's, decision 0089) changes nothing.
   */
  async apply(
    provider: string,
    receipt: DeliveryReceipt,
    idForm: ReceiptIdForm = 'same',
    { keepsFinal = false }: { keepsFinal?: boolean } = {},
  ): Promise<ReceiptOutcome> {
    const replacesFinal = !keepsFinal && replacesFinalStatus(receipt);
    const exact = receiptProviderIds(receipt.id, idForm);
    let outcome: ReceiptOutcome = 'unmatched';
    if (exact.length > 0) {
      for (let attempt = 0; attempt <= UNMATCHED_RETRIES && outcome === 'unmatched'; attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, UNMATCHED_RETRY_MS));
        outcome = await this.applyOnce(provider, receipt, replacesFinal, exact, exact);
      }
      if (outcome !== 'unmatched') return outcome;
      if (await this.submissionsUnrecorded(provider)) {
        // Perhaps this one's: its recording is late (retried through a database fault). The SMSC is asked to send
        // the receipt again later (ESME_RX_T_APPN) instead of having it acknowledged and lost, or applied to a
        // message that only has another form of the id.
        throw new ReceiptTooEarlyError();
      }
    }
    if (idForm === 'auto')
      outcome = await this.applyOnce(
        provider,
        receipt,
        replacesFinal,
        providerIdCandidates(receipt.id),
        exact,
      );
    if (outcome === 'unmatched') {
      // Only the provider's id: the receipt's text may name the destination.
      this.logger.warn({ provider, providerMessageId: receipt.id }, 'delivery receipt for no known message');
    }
    return outcome;
  }

  /**
   * Whether a message may have been handed to this provider and not recorded yet: QUEUED with an attempt made on
   * this provider (the dispatch records the provider with the attempt), and created in the last
   * {@link RECENT_SUBMISSION_MINUTES} minutes (a message is submitted as soon as it is queued, and its recording is
   * retried for at most 12 s; one waiting out a provider's refusals for longer does not keep every unknown receipt
   * coming back). The partial index of QUEUED messages by creation finds them.
   */
  private async submissionsUnrecorded(provider: string): Promise<boolean> {
    const [row] = (await this.dataSource.query(
      `SELECT EXISTS (SELECT 1 FROM sms_messages WHERE status = $1 AND attempts > 0 AND provider = $3
          AND created_at > now() - $2 * interval '1 minute') AS pending`,
      [SMS_STATUS.queued, RECENT_SUBMISSION_MINUTES, provider],
    )) as { pending: boolean }[];
    return row.pending;
  }

  /**
   * One statement: picks the one message the receipt is for (the first of the given forms, in their order, that a
   * message of this provider has; the unique index finds each form) and updates it unless the status guard keeps
   * its final status. A message with a final status is never picked by a form that is not one of `exact`, so a
   * later form's message without one gets the receipt: a guess at the id's form never replaces a final status.
   * `replacesFinal`: whether the receipt may replace a final status of a message found by an exact form.
   */
  private async applyOnce(
    provider: string,
    receipt: DeliveryReceipt,
    replacesFinal: boolean,
    forms: string[],
    exact: string[],
  ): Promise<ReceiptOutcome> {
    const [target] = (await this.dataSource.query(
      `WITH target AS (
         SELECT id, provider_message_id FROM sms_messages
          WHERE provider = $1 AND provider_message_id = ANY($2::text[])
            AND (provider_message_id = ANY($9::text[]) OR NOT (status = ANY($6::text[])))
          ORDER BY array_position($2::text[], provider_message_id)
          LIMIT 1
       ), applied AS (
         UPDATE sms_messages m
            SET status = $3, error_code = $4, system_delivery_time = now(),
                delivery_time = CASE WHEN $8::boolean THEN COALESCE($5, now()) ELSE m.delivery_time END
           FROM target
          WHERE m.id = target.id AND m.provider_message_id = target.provider_message_id
            AND (NOT (m.status = ANY($6::text[])) OR ($7::boolean AND m.provider_message_id = ANY($9::text[])))
         RETURNING m.id
       )
       SELECT target.id, target.provider_message_id, EXISTS (SELECT 1 FROM applied) AS applied FROM target`,
      [
        provider,
        forms,
        receipt.stat,
        receipt.err || null,
        receipt.doneDate ?? null,
        FINAL_STATES,
        replacesFinal,
        setsDeliveryTime(receipt),
        exact,
      ],
    )) as { id: string; provider_message_id: string; applied: boolean }[];
    if (!target) return 'unmatched';
    if (!target.applied) return 'ignored';
    this.logger.info(
      {
        messageId: target.id,
        providerMessageId: target.provider_message_id,
        status: receipt.stat,
        err: receipt.err,
        intermediate: receipt.intermediate === true,
      },
      'SMS delivery receipt',
    );
    return 'applied';
  }
}
