import { TRANSFERS_FAILED, TRANSFERS_IN_FLIGHT } from '#modules/wallet/ledger/transfer-checks.js';
import { FAILURE_STATUSES, IN_FLIGHT_STATUSES, isFinal, TRANSFER_STATUSES } from './transfer-status.js';

describe('the transfer statuses that ledger verify names (the wallet reads transfers without importing them)', () => {
  it('in flight and failed are the ones of the status machine', () => {
    expect([...TRANSFERS_IN_FLIGHT]).toStrictEqual([...IN_FLIGHT_STATUSES]);
    expect([...TRANSFERS_FAILED]).toStrictEqual([...FAILURE_STATUSES]);
  });

  it('every status is in flight, failed or ACREDITADO, and only those in flight are not final', () => {
    for (const status of TRANSFER_STATUSES) {
      const inFlight = (TRANSFERS_IN_FLIGHT as readonly string[]).includes(status);
      const failed = (TRANSFERS_FAILED as readonly string[]).includes(status);
      expect({
        status,
        kinds: [inFlight, failed, status === 'ACREDITADO'].filter(Boolean).length,
      }).toStrictEqual({
        status,
        kinds: 1,
      });
      expect({ status, final: isFinal(status) }).toStrictEqual({ status, final: !inFlight });
    }
  });
});
