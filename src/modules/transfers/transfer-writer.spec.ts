import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The source tree (src/), as the repository holds it. */
const SRC = path.resolve(import.meta.dirname, '../..');

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full, suffix);
    return entry.name.endsWith(suffix) && !entry.name.endsWith('.spec.ts') ? [full] : [];
  });
}

/** A statement that writes one of the two tables, in SQL text anywhere. */
const WRITES = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE)\s+"?(transfers|transfer_status_history)\b/i;
/** A call of the database functions that create transfers, from TypeScript. */
const CREATES = /\bSELECT\s+(wallet_create_transfers?|wallet_reverse_transfer)\s*\(/i;

const holding = (files: string[], pattern: RegExp) =>
  files.filter((file) => pattern.test(readFileSync(file, 'utf8'))).map((file) => path.relative(SRC, file));

describe('one writer of transfers and transfer_status_history (docs/decisions/0027)', () => {
  it('in TypeScript: TransferWriter, which also makes the only calls of wallet_create_transfer(s) and wallet_reverse_transfer', () => {
    const typescript = filesUnder(SRC, '.ts');
    expect(holding(typescript, WRITES)).toEqual(['modules/transfers/transfer-writer.ts']);
    expect(holding(typescript, CREATES)).toEqual(['modules/transfers/transfer-writer.ts']);
  });

  it('in the database: wallet_create_transfers (an external transfer), wallet_write_internal (internal ones) and wallet_reverse_transfer (reversals, returns)', () => {
    expect(holding(filesUnder(SRC, '.sql'), WRITES).sort()).toEqual([
      'modules/transfers/sql/wallet_create_transfers.sql',
      'modules/transfers/sql/wallet_reverse_transfer.sql',
      'modules/transfers/sql/wallet_write_internal.sql',
    ]);
  });
});
