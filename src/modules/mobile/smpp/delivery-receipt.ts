/**
 * SMPP delivery receipts (DOMAIN.md C7): the text
 * `id:… sub:… dlvrd:… submit date:YYMMDDhhmm done date:YYMMDDhhmm stat:XXXXXXX err:E Text:…`
 * in a deliver_sm's short_message, or the SMPP 3.4 TLVs receipted_message_id
 * and message_state.
 */
export interface DeliveryReceipt {
  /** The provider's message id (submit_sm_resp message_id). */
  readonly id: string;
  /** The receipt's stat as sent (open set: DELIVRD, UNDELIV, EXPIRED, REJECTD, BUFFRED, …). */
  readonly stat: string;
  /** The receipt's err field ('' when absent). */
  readonly err: string;
  readonly submitDate?: Date;
  readonly doneDate?: Date;
  /**
   * An intermediate delivery notification (esm_class 0x20, DOMAIN.md C7), not the SMSC's final word: it never
   * changes a final status. Absent or false: a receipt (esm_class 0x04, or the simulator's).
   */
  readonly intermediate?: boolean;
}

/** SMPP 3.4 message_state values (§5.2.28) as receipt stat words. */
const MESSAGE_STATES: Record<number, string> = {
  1: 'ENROUTE',
  2: 'DELIVRD',
  3: 'EXPIRED',
  4: 'DELETED',
  5: 'UNDELIV',
  6: 'ACCEPTD',
  7: 'UNKNOWN',
  8: 'REJECTD',
  9: 'SKIPPED',
};

/**
 * Final states: only a later final receipt replaces one of them, and not every one ({@link replacesFinalStatus}).
 * SMPP 3.4's final message states (every one but ENROUTE, DOMAIN.md C7) and the vendor word FAILED.
 */
export const FINAL_STATES: readonly string[] = [
  'DELIVRD',
  'ACCEPTD',
  'EXPIRED',
  'DELETED',
  'UNDELIV',
  'REJECTD',
  'UNKNOWN',
  'SKIPPED',
  'FAILED',
];

/** esm_class message type (bits 5-2, SMPP 3.4 §5.2.12) of an intermediate delivery notification. */
const INTERMEDIATE_NOTIFICATION = 0x20;

/** Whether a deliver_sm's esm_class marks an intermediate delivery notification rather than a receipt. */
export function isIntermediateNotification(esmClass: number): boolean {
  return (esmClass & 0x3c) === INTERMEDIATE_NOTIFICATION;
}

/**
 * Final stats that never replace another final status: UNKNOWN (no news after, say, DELIVRD) and ACCEPTD (many
 * SMSCs send it for "accepted", and receipts arrive concurrently, so a late ACCEPTD must not undo a delivery).
 * Both stay final against intermediate notifications, and a later DELIVRD still replaces them.
 */
const NEVER_REPLACING: readonly string[] = ['UNKNOWN', 'ACCEPTD'];

/**
 * Whether a receipt may replace a status that is already final. Never a non-final stat, never an
 * intermediate notification (whatever its stat), never UNKNOWN or ACCEPTD ({@link NEVER_REPLACING}). Any other
 * final receipt does: the SMSC's latest final word wins (a correction, or the same receipt sent again).
 */
export function replacesFinalStatus(receipt: Pick<DeliveryReceipt, 'stat' | 'intermediate'>): boolean {
  return (
    receipt.intermediate !== true &&
    !NEVER_REPLACING.includes(receipt.stat) &&
    FINAL_STATES.includes(receipt.stat)
  );
}

/**
 * One field of the receipt's header: `name:value`, at a field boundary, in any case, with optional whitespace after
 * the colon (`stat: DELIVRD`), though never a skip onto the next field's name (`err: stat:…` is no err).
 */
const field = (header: string, name: string, value: string): string | undefined =>
  new RegExp(`(?:^|\\s)${name}:(?:\\s+(?![a-z_]+(?: date)?:))?(${value})`, 'i').exec(header)?.[1];

/**
 * The receipt's text without its `text:` field and what follows: that is the start of the message as the user
 * wrote it, and may read like a receipt (`Text:id:77 stat:UNDELIV`). Only the header before it is read.
 */
function receiptHeader(text: string): string {
  const start = text.search(/(?:^|\s)text:/i);
  return start < 0 ? text : text.slice(0, start);
}

/**
 * `YYMMDDhhmm` or `YYMMDDhhmmss`. The receipt carries no zone: it is read as the SMSC's clock, `utcOffsetMinutes`
 * east of UTC (SMPP_RECEIPT_UTC_OFFSET; 0, UTC, by default; −180 for an SMSC on Argentine time).
 */
export function parseReceiptDate(value: string | undefined, utcOffsetMinutes = 0): Date | undefined {
  const m = value ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?$/.exec(value) : null;
  if (!m) return undefined;
  const [, yy, mo, dd, hh, mi, ss] = m;
  const date = new Date(
    Date.UTC(2000 + Number(yy), Number(mo) - 1, Number(dd), Number(hh), Number(mi), Number(ss ?? 0)),
  );
  // Reject rollovers such as month 13 or day 32 (checked on the wall-clock reading, before the offset).
  if (date.getUTCMonth() !== Number(mo) - 1 || date.getUTCDate() !== Number(dd)) return undefined;
  return new Date(date.getTime() - utcOffsetMinutes * 60_000);
}

/** A stat word safe to store: letters and underscores, upper case, at most 20. */
export function normaliseStat(stat: string): string | undefined {
  const upper = stat.trim().toUpperCase();
  return /^[A-Z_]{1,20}$/.test(upper) ? upper : undefined;
}

/**
 * Reads a receipt from the deliver_sm text, falling back to the TLVs
 * (receipted_message_id, message_state). Undefined when it is not a receipt.
 * The deliver_sm's esm_class, when given, says whether it is an intermediate notification. Its dates are read as
 * the SMSC's clock, `utcOffsetMinutes` east of UTC ({@link parseReceiptDate}).
 */
export function parseDeliveryReceipt(
  text: string,
  pdu: { receiptedMessageId?: string; messageState?: number; esmClass?: number } = {},
  utcOffsetMinutes = 0,
): DeliveryReceipt | undefined {
  const header = receiptHeader(text);
  const id = field(header, 'id', '[^\\s]+') ?? pdu.receiptedMessageId;
  const statText = field(header, 'stat', '[A-Za-z_]+');
  const stat = normaliseStat(
    statText ?? (pdu.messageState !== undefined ? (MESSAGE_STATES[pdu.messageState] ?? '') : ''),
  );
  if (!id || !stat) return undefined;
  return {
    id: id.replace(/\0+$/, ''),
    stat,
    err: field(header, 'err', '[0-9A-Za-z]{1,10}') ?? '',
    submitDate: parseReceiptDate(field(header, 'submit[ _]date', '\\d{10,12}'), utcOffsetMinutes),
    doneDate: parseReceiptDate(field(header, 'done[ _]date', '\\d{10,12}'), utcOffsetMinutes),
    intermediate: pdu.esmClass !== undefined && isIntermediateNotification(pdu.esmClass),
  };
}

/**
 * How the SMSC writes a receipt's id against the message_id its submit_sm_resp gave (SMPP_RECEIPT_ID_FORM,
 * docs/decisions/0085): `same` (SMPP 3.4: the same id, perhaps zero-padded), `hex` (receipts in hex, submit_sm_resp
 * in decimal), `decimal` (the reverse), or `auto` (the exact id first, then the other forms).
 */
export type ReceiptIdForm = 'same' | 'hex' | 'decimal' | 'auto';

const withoutLeadingZeros = (id: string): string => id.replace(/^0+(?=.)/, '');

/** A decimal id in hex, lower then upper case; none when the id is not decimal. */
function decimalInHex(id: string): string[] {
  const unpadded = withoutLeadingZeros(id);
  if (!/^[0-9]{1,30}$/.test(unpadded)) return [];
  const hex = BigInt(unpadded).toString(16);
  return [...new Set([hex, hex.toUpperCase()])];
}

/** A hex id in decimal; none when the id is not hex. */
function hexInDecimal(id: string): string[] {
  const unpadded = withoutLeadingZeros(id);
  return /^[0-9a-f]{1,24}$/i.test(unpadded) ? [BigInt(`0x${unpadded}`).toString(10)] : [];
}

/**
 * The forms of a provider id that are the id itself: as sent, then without leading zeros (SMPP 3.4's message_id is
 * often zero-padded to 10 characters in receipts). A receipt looks only for these while its message's id may still
 * be on its way to the database (the receipt-before-record race, docs/decisions/0085).
 */
export function exactProviderIds(id: string): string[] {
  return [...new Set([id, withoutLeadingZeros(id)])];
}

/**
 * The stored forms a receipt's id names under the configured {@link ReceiptIdForm}, the only ones it is looked up
 * by: `same` and `auto` the exact forms (auto tries {@link providerIdCandidates} later), `hex` the hex id in decimal,
 * `decimal` the decimal id in hex (lower and upper case). Empty when the id cannot be read in that base.
 */
export function receiptProviderIds(id: string, form: ReceiptIdForm): string[] {
  if (form === 'hex') return hexInDecimal(id);
  if (form === 'decimal') return decimalInHex(id);
  return exactProviderIds(id);
}

/**
 * Every form one provider id may take, in the order a receipt tries them with SMPP_RECEIPT_ID_FORM=auto once no
 * message has an exact form ({@link exactProviderIds}); the receipt applies to the message of the first form some
 * message has, never to several:
 * 1. the id as sent;
 * 2. without leading zeros;
 * 3. a decimal id in hex, lower then upper case (the SMSC answered submit_sm in hex, the receipt in decimal);
 * 4. a hex id in decimal (the reverse).
 * So "16" is tried as "16", then "10", then "22": a message whose id is exactly "16" always wins.
 */
export function providerIdCandidates(id: string): string[] {
  return [...new Set([...exactProviderIds(id), ...decimalInHex(id), ...hexInDecimal(id)])];
}

/** Whether a receipt sets delivery_time: only a final DELIVRD receipt says when the network delivered the message. */
export function setsDeliveryTime(receipt: Pick<DeliveryReceipt, 'stat' | 'intermediate'>): boolean {
  return receipt.stat === 'DELIVRD' && receipt.intermediate !== true;
}
