import { encodeText, fitsGsm7 } from './encoding.js';
import {
  exactProviderIds,
  FINAL_STATES,
  isIntermediateNotification,
  parseDeliveryReceipt,
  parseReceiptDate,
  providerIdCandidates,
  receiptProviderIds,
  replacesFinalStatus,
  setsDeliveryTime,
} from './delivery-receipt.js';

describe('parseDeliveryReceipt', () => {
  it('reads the usual receipt text', () => {
    expect(
      parseDeliveryReceipt(
        'id:0123456789 sub:001 dlvrd:001 submit date:2611231010 done date:2611231012 stat:DELIVRD err:000 Text:Hola',
      ),
    ).toEqual({
      id: '0123456789',
      stat: 'DELIVRD',
      err: '000',
      submitDate: new Date('2026-11-23T10:10:00Z'),
      doneDate: new Date('2026-11-23T10:12:00Z'),
      intermediate: false,
    });
  });

  it('marks an intermediate notification (esm_class 0x20), not a receipt (0x04) or one without esm_class', () => {
    const text = 'id:12 sub:001 dlvrd:000 submit date:2611231010 done date:2611231012 stat:UNKNOWN err:000';
    expect(parseDeliveryReceipt(text, { esmClass: 0x20 })).toMatchObject({
      stat: 'UNKNOWN',
      intermediate: true,
    });
    expect(parseDeliveryReceipt(text, { esmClass: 0x04 })).toMatchObject({ intermediate: false });
    expect(parseDeliveryReceipt(text)).toMatchObject({ intermediate: false });
  });

  it('keeps any stat word (an open set), upper-cased, and dates with seconds', () => {
    expect(
      parseDeliveryReceipt(
        'id:ab12 sub:001 dlvrd:000 submit date:261123101005 done date:261123101530 stat:buffred err:0A1',
      ),
    ).toMatchObject({ id: 'ab12', stat: 'BUFFRED', err: '0A1', doneDate: new Date('2026-11-23T10:15:30Z') });
  });

  it('falls back to the receipted_message_id and message_state TLVs', () => {
    expect(parseDeliveryReceipt('', { receiptedMessageId: 'x-1', messageState: 5 })).toEqual({
      id: 'x-1',
      stat: 'UNDELIV',
      err: '',
      submitDate: undefined,
      doneDate: undefined,
      intermediate: false,
    });
  });

  it('is undefined for text that is not a receipt', () => {
    expect(parseDeliveryReceipt('hello there')).toBeUndefined();
    expect(parseDeliveryReceipt('id:123 stat:')).toBeUndefined();
    expect(parseDeliveryReceipt('id:123 stat:DELIVERED_TO_THE_HANDSET_OK')).toBeUndefined();
  });

  it('reads no field from the text the user wrote (the text: field and after it)', () => {
    const header = 'sub:001 dlvrd:001 submit date:2611231010 done date:2611231012';
    // A header without an id: the TLV's id, never one the message text quotes.
    expect(
      parseDeliveryReceipt(`${header} stat:DELIVRD err:000 Text:Hola id:77 stat:UNDELIV`, {
        receiptedMessageId: '99',
      }),
    ).toMatchObject({ id: '99', stat: 'DELIVRD', err: '000' });
    // A header without stat, err or dates: none of them from the text.
    expect(parseDeliveryReceipt('id:99 sub:001 dlvrd:001 Text:ok stat:DELIVRD err:000')).toBeUndefined();
    expect(
      parseDeliveryReceipt('id:99 stat:UNDELIV TEXT: err:123 done date:2611231012 submit date:2611231010'),
    ).toEqual({
      id: '99',
      stat: 'UNDELIV',
      err: '',
      submitDate: undefined,
      doneDate: undefined,
      intermediate: false,
    });
    // A header without stat takes the message_state TLV, not the text's stat.
    expect(
      parseDeliveryReceipt(`id:99 ${header} err:000 text:ok stat:DELIVRD`, { messageState: 5 }),
    ).toMatchObject({ id: '99', stat: 'UNDELIV' });
    // "text:" counts only as a field: inside another field's value it cuts nothing.
    expect(parseDeliveryReceipt('id:context:1 stat:DELIVRD')).toMatchObject({ id: 'context:1' });
  });

  it('accepts whitespace after the colon and submit_date/done_date with underscores', () => {
    expect(
      parseDeliveryReceipt(
        'id: 77 sub: 001 dlvrd: 001 submit date: 2611231010 done date: 2611231012 stat: DELIVRD err: 000 Text: Hola',
      ),
    ).toEqual({
      id: '77',
      stat: 'DELIVRD',
      err: '000',
      submitDate: new Date('2026-11-23T10:10:00Z'),
      doneDate: new Date('2026-11-23T10:12:00Z'),
      intermediate: false,
    });
    expect(
      parseDeliveryReceipt(
        'id:77 sub:001 dlvrd:001 submit_date:2611231010 done_date:261123101530 stat:DELIVRD',
      ),
    ).toMatchObject({
      submitDate: new Date('2026-11-23T10:10:00Z'),
      doneDate: new Date('2026-11-23T10:15:30Z'),
    });
    // An empty field is empty: the whitespace after its colon never leads to the next field's name.
    expect(parseDeliveryReceipt('id: stat:DELIVRD', { receiptedMessageId: '5' })).toMatchObject({
      id: '5',
      stat: 'DELIVRD',
    });
    expect(parseDeliveryReceipt('id:5 err: stat:DELIVRD done date: submit_date:2611231010')).toMatchObject({
      err: '',
      doneDate: undefined,
    });
  });

  it('refuses impossible dates', () => {
    expect(parseReceiptDate('2613231010')).toBeUndefined();
    expect(parseReceiptDate('2602301010')).toBeUndefined();
    expect(parseReceiptDate('26112310')).toBeUndefined();
  });

  it("reads the date as the SMSC's clock, the offset east of UTC given", () => {
    // An SMSC on Argentine time (UTC−3): 10:12 there is 13:12 UTC, across midnight and a year's end too.
    expect(parseReceiptDate('2611231012', -180)?.toISOString()).toBe('2026-11-23T13:12:00.000Z');
    expect(parseReceiptDate('261231223045', -180)?.toISOString()).toBe('2027-01-01T01:30:45.000Z');
    expect(parseReceiptDate('2611231012', 330)?.toISOString()).toBe('2026-11-23T04:42:00.000Z');
    // A rollover is refused on the SMSC's own reading, whatever the offset.
    expect(parseReceiptDate('2602302330', -180)).toBeUndefined();
    expect(
      parseDeliveryReceipt('id:1 submit date:2611231010 done date:2611231012 stat:DELIVRD err:000', {}, -180),
    ).toMatchObject({
      submitDate: new Date('2026-11-23T13:10:00.000Z'),
      doneDate: new Date('2026-11-23T13:12:00.000Z'),
    });
  });
});

describe('isIntermediateNotification', () => {
  it('reads the message type bits (5-2) of esm_class', () => {
    expect(isIntermediateNotification(0x20)).toBe(true);
    expect(isIntermediateNotification(0x20 | 0x40 | 0x03)).toBe(true); // UDHI and messaging mode bits aside
    expect(isIntermediateNotification(0x04)).toBe(false);
    expect(isIntermediateNotification(0x24)).toBe(false);
    expect(isIntermediateNotification(0)).toBe(false);
  });
});

describe('replacesFinalStatus', () => {
  it('lets a final receipt replace a final status, except UNKNOWN and intermediate notifications', () => {
    expect(replacesFinalStatus({ stat: 'EXPIRED' })).toBe(true);
    expect(replacesFinalStatus({ stat: 'DELIVRD', intermediate: false })).toBe(true);
    // UNKNOWN after DELIVRD is no news: the delivery stands.
    expect(replacesFinalStatus({ stat: 'UNKNOWN' })).toBe(false);
    expect(replacesFinalStatus({ stat: 'UNKNOWN', intermediate: true })).toBe(false);
    // An intermediate notification never changes a final status, whatever its stat.
    expect(replacesFinalStatus({ stat: 'UNDELIV', intermediate: true })).toBe(false);
    // Non-final stats never do.
    expect(replacesFinalStatus({ stat: 'ENROUTE' })).toBe(false);
    expect(replacesFinalStatus({ stat: 'BUFFRED' })).toBe(false);
  });

  it('counts ACCEPTD (message_state 6) as final, as SMPP 3.4 and DOMAIN.md C7 do', () => {
    expect(FINAL_STATES).toContain('ACCEPTD');
    expect(parseDeliveryReceipt('', { receiptedMessageId: '1', messageState: 6 })).toMatchObject({
      stat: 'ACCEPTD',
    });
  });

  it('never lets ACCEPTD replace another final status ("accepted" at many SMSCs), though DELIVRD replaces it', () => {
    expect(replacesFinalStatus({ stat: 'ACCEPTD' })).toBe(false);
    expect(replacesFinalStatus({ stat: 'ACCEPTD', intermediate: true })).toBe(false);
    expect(replacesFinalStatus({ stat: 'DELIVRD' })).toBe(true);
  });
});

describe('setsDeliveryTime', () => {
  it('is true for a final DELIVRD receipt only', () => {
    expect(setsDeliveryTime({ stat: 'DELIVRD' })).toBe(true);
    expect(setsDeliveryTime({ stat: 'DELIVRD', intermediate: true })).toBe(false);
    for (const stat of ['UNDELIV', 'EXPIRED', 'REJECTD', 'ENROUTE', 'BUFFRED', 'ACCEPTD', 'UNKNOWN']) {
      expect(setsDeliveryTime({ stat })).toBe(false);
    }
  });
});

describe('providerIdCandidates', () => {
  it('adds the decimal form of a hex id and the hex forms of a decimal id', () => {
    expect(providerIdCandidates('1a2b')).toEqual(['1a2b', '6699']);
    expect(providerIdCandidates('6699')).toEqual(['6699', '1a2b', '1A2B', '26265']);
    expect(providerIdCandidates('sim-1')).toEqual(['sim-1']);
  });

  it('tries the id as sent first, then without leading zeros, then decimal→hex, then hex→decimal', () => {
    // A receipt for "16" prefers a message "16"; only without one does "10" (its hex form), then "22", match.
    expect(providerIdCandidates('16')).toEqual(['16', '10', '22']);
    // SMPP 3.4's zero-padded 10-character id finds its message "12345".
    expect(providerIdCandidates('0000012345')).toEqual(['0000012345', '12345', '3039', '74565']);
    expect(providerIdCandidates('00ab')).toEqual(['00ab', 'ab', '171']);
    // Zeros only: one zero is left, never an empty id.
    expect(providerIdCandidates('0000')).toEqual(['0000', '0']);
  });
});

describe('exactProviderIds', () => {
  it('is the id as sent and without leading zeros, never another base', () => {
    expect(exactProviderIds('16')).toEqual(['16']);
    expect(exactProviderIds('0000012345')).toEqual(['0000012345', '12345']);
    expect(exactProviderIds('0000')).toEqual(['0000', '0']);
    expect(exactProviderIds('1a2b')).toEqual(['1a2b']);
  });
});

describe('encodeText', () => {
  it('uses GSM 7-bit (data_coding 0) for the default alphabet and its extension table', () => {
    const encoded = encodeText('A€[');
    expect(encoded).toMatchObject({ alphabet: 'GSM7', dataCoding: 0 });
    expect([...encoded.bytes]).toEqual([0x41, 0x1b, 0x65, 0x1b, 0x3c]);
  });

  it('uses UCS2 (data_coding 8, UTF-16BE) otherwise', () => {
    expect(fitsGsm7('código')).toBe(false);
    const encoded = encodeText('ó😀');
    expect(encoded).toMatchObject({ alphabet: 'UCS2', dataCoding: 8 });
    expect([...encoded.bytes]).toEqual([0x00, 0xf3, 0xd8, 0x3d, 0xde, 0x00]);
  });
});

describe('receiptProviderIds', () => {
  it('is the exact forms with same and auto (SMPP 3.4: the receipt carries the submit_sm_resp id)', () => {
    expect(receiptProviderIds('0000000016', 'same')).toEqual(['0000000016', '16']);
    expect(receiptProviderIds('1a2b', 'auto')).toEqual(['1a2b']);
  });

  it('is only the decimal form of a hex receipt id with hex, never the id as sent', () => {
    expect(receiptProviderIds('10', 'hex')).toEqual(['16']);
    expect(receiptProviderIds('000000001A', 'hex')).toEqual(['26']);
    expect(receiptProviderIds('sim-1', 'hex')).toEqual([]);
  });

  it('is only the hex forms of a decimal receipt id with decimal, never the id as sent', () => {
    expect(receiptProviderIds('16', 'decimal')).toEqual(['10']);
    expect(receiptProviderIds('0000000026', 'decimal')).toEqual(['1a', '1A']);
    expect(receiptProviderIds('1a', 'decimal')).toEqual([]);
  });
});
