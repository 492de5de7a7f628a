import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { auditAppend, systemActor, type AuditActor, type AuditEntry } from '#modules/audit/audit-trail.js';
import { SigningKeysService } from './signing-keys.service.js';
import { ADVISORY_LOCKS } from '#common/database/advisory-locks.js';

/**
 * The audit trail of the service's signing keys (docs/decisions/0032-audit-trail.md, amended). The keys live in a
 * file (SIGNING_KEYS_FILE), not in the database, so a key change and its record cannot commit together: the file
 * is the truth and the trail catches up with it. Every key the file holds has a `created` record, and every retired
 * one a `retired` record; a change that lost its record (a crash or a failed commit between the file's write and
 * the record, or the key the service generates in development) is recorded as `system:signing-keys` by the next
 * `keys rotate`/`retire` or API start. All of it under one lock, so a change and a catch-up never record the same
 * thing twice.
 */
@Injectable()
export class SigningKeyAuditService {
  constructor(
    private readonly keys: SigningKeysService,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('SigningKeyAuditService');
  }

  /**
   * A key change and its record: under the trail's lock, what the trail lacks is recorded first, then `change`
   * writes the file and its record (`entry` of its result) is appended; both commit when `change` succeeded. If
   * the commit fails after the file was written, the next catch-up records the change.
   */
  async change<T>(actor: AuditActor, change: () => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    return this.dataSource.transaction(async (manager) => {
      await this.catchUp(manager);
      const result = await change();
      await auditAppend(manager, actor, entry(result));
      return result;
    });
  }

  /** Records what the trail lacks of the key file (see the class); how many records it wrote. */
  async reconcile(): Promise<number> {
    return this.dataSource.transaction((manager) => this.catchUp(manager));
  }

  private async catchUp(manager: EntityManager): Promise<number> {
    await manager.query('SELECT pg_advisory_xact_lock($1)', [ADVISORY_LOCKS.signingKeyTrail]);
    const stored = await this.keys.history();
    if (stored.length === 0) return 0;
    const recorded = (await manager.query(
      `SELECT resource_id, outcome FROM audit_records
        WHERE app_id IS NULL AND resource_type = 'signing_key' AND resource_id = ANY ($1::text[])
          AND outcome IN ('created', 'retired')`,
      [stored.map((key) => key.kid)],
    )) as { resource_id: string; outcome: string }[];
    const has = new Set(recorded.map((row) => `${row.outcome} ${row.resource_id}`));
    const missing: AuditEntry[] = [];
    for (const key of stored) {
      for (const outcome of key.retiredAt === null ? ['created'] : ['created', 'retired']) {
        if (!has.has(`${outcome} ${key.kid}`))
          missing.push({ resourceType: 'signing_key', resourceId: key.kid, outcome });
      }
    }
    if (missing.length === 0) return 0;
    await auditAppend(manager, systemActor('signing-keys', 'reconcile', null), ...missing);
    // Info, not a warning: the key the service generates in development is recorded this way on a first start.
    this.logger.info(
      { records: missing.length },
      'signing key changes without an audit record were recorded now (as system:signing-keys)',
    );
    return missing.length;
  }
}
