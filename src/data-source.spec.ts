import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { schemaDeclarationOf } from '#common/database/schema-declaration.js';
import { ENTITIES } from './data-source.js';

/** The source tree (src/). */
const SRC = import.meta.dirname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [full] : [];
  });
}

describe('the entities marked @SchemaDeclaration', () => {
  const declared = ENTITIES.filter((entity) => schemaDeclarationOf(entity) !== undefined);

  it('marks the entities that only declare their table', () => {
    expect(declared.map((entity) => schemaDeclarationOf(entity)?.name).sort()).toEqual([
      'audit_records',
      'idempotency_keys',
      'journal_entries',
      'ledger_accounts',
      'operated_amounts',
      'postings',
      'rate_limit_counters',
      'transfer_status_history',
      'transfers',
      'unclaimed_returns',
    ]);
  });

  it('leaves them to the persistence root and other entities: no service reads or writes through them', () => {
    const users = sources(SRC)
      .filter((file) => !file.includes(`${path.sep}entities${path.sep}`) && !file.endsWith('data-source.ts'))
      .flatMap((file) => {
        const text = readFileSync(file, 'utf8');
        return declared
          .filter((entity) => new RegExp(`\\b${entity.name}\\b`).test(text))
          .map((entity) => `${path.relative(SRC, file)}: ${entity.name}`);
      });
    expect(users).toEqual([]);
  });
});
