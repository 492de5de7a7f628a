import { createHash } from 'node:crypto';

/**
 * A stable UUID derived from `text`: the first 128 bits of its SHA-256, laid out with version 5 and the RFC 4122
 * variant, so every process derives the same id without a lookup. The database derives the same in
 * ledger_system_account (src/modules/wallet/sql/ledger_system_account.sql).
 */
export function derivedUuid(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
