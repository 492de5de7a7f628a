import smpp from 'smpp';

export interface EncodedText {
  /** `GSM7`: GSM 03.38 default alphabet, one septet per octet (SMPP's unpacked form); `UCS2`: UTF-16BE. */
  readonly alphabet: 'GSM7' | 'UCS2';
  /** SMPP 3.4 data_coding: 0x00 (SMSC default alphabet, GSM 03.38) or 0x08 (UCS2). */
  readonly dataCoding: 0x00 | 0x08;
  readonly bytes: Buffer;
}

export const DATA_CODING_GSM7 = 0x00;
export const DATA_CODING_UCS2 = 0x08;

/** Whether every character is in the GSM 03.38 default alphabet or its extension table (€, [, ], …). */
export function fitsGsm7(text: string): boolean {
  return smpp.gsmCoder.GSM.charRegex.test(text);
}

/**
 * The bytes and data_coding of a message: GSM 7-bit when the text fits the
 * default alphabet, else UCS2. Up to 64 characters, GSM needs at most 128
 * septets (160 allowed) and UCS2 at most 256 octets, so a long UCS2 text
 * goes in the message_payload TLV instead of short_message (140 octets).
 */
export function encodeText(text: string): EncodedText {
  if (fitsGsm7(text)) {
    return { alphabet: 'GSM7', dataCoding: DATA_CODING_GSM7, bytes: smpp.gsmCoder.encode(text, 0) };
  }
  return { alphabet: 'UCS2', dataCoding: DATA_CODING_UCS2, bytes: Buffer.from(text, 'utf16le').swap16() };
}

/** The most octets short_message may carry; longer texts travel in message_payload. */
export const SHORT_MESSAGE_MAX_OCTETS = 140;
