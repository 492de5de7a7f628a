import type { EntityManager } from 'typeorm';

/**
 * Every advisory lock key of the service, in one place so that no two uses share one by accident. The single-key
 * form (one bigint) and the two-key form (class, hashtext(name)) are separate spaces in PostgreSQL.
 */
export const ADVISORY_LOCKS = {
  /** Single key: migrations, one process at a time across the deployment. */
  migration: 7_261_001,
  /** Single key: every writer of the signing keys' audit records. */
  signingKeyTrail: 7_261_023,
  /** Two-key classes (the second key is hashtext of a name). */
  sweep: 7_261_017,
  smsRateLimit: 8_001,
  smsProviderId: 8_002,
  subjectRegistration: 8_003,
} as const;

/** Takes the two-key advisory lock (`lockClass`, hashtext(`name`)) until the end of the caller's transaction. */
export async function lockUntilCommit(
  manager: EntityManager,
  lockClass: number,
  name: string,
): Promise<void> {
  await manager.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [lockClass, name]);
}
