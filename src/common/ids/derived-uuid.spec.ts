import { createHash } from 'node:crypto';
import { derivedUuid } from './derived-uuid.js';

describe('derivedUuid', () => {
  it('lays the first 128 bits of the SHA-256 out as a version 5, RFC 4122 variant UUID', () => {
    const hex = createHash('sha256').update('counterparty:2850590940090418135201').digest('hex');
    const id = derivedUuid('counterparty:2850590940090418135201');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(id.replace(/-/g, '')).toBe(`${hex.slice(0, 12)}5${hex.slice(13, 16)}8${hex.slice(17, 32)}`);
  });

  it('gives the same id for the same text and another for another text', () => {
    expect(derivedUuid('wallet-system-account:HOLDS:ARS')).toBe(
      derivedUuid('wallet-system-account:HOLDS:ARS'),
    );
    expect(derivedUuid('wallet-system-account:HOLDS:ARS')).not.toBe(
      derivedUuid('wallet-system-account:HOLDS:USD'),
    );
  });
});
