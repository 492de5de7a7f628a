import type { EnvReaders } from '../env-readers.js';

/** PostgreSQL: a server of the operator's, or the embedded one under DATA_DIR. */
export interface DatabaseConfig {
  /** Unset: the embedded PostgreSQL under dataDir. */
  readonly databaseUrl: string | undefined;
  /**
   * Optional streaming replica for the reads that tolerate its lag (decision 0033); unset: every read on the
   * primary. Needs DATABASE_URL (the embedded database has no replica).
   */
  readonly databaseReadUrl: string | undefined;
  readonly databasePoolSize: number;
  /** Longest SQL statement on the service's connections (0: no limit); PostgreSQL cancels longer ones. */
  readonly dbStatementTimeoutMs: number;
}

/** DB_STATEMENT_TIMEOUT_MS unset (also what connections opened without a config get). */
export const DEFAULT_DB_STATEMENT_TIMEOUT_MS = 15_000;

export function loadDatabaseConfig({ int, url, problems }: EnvReaders): DatabaseConfig {
  const databaseUrl = url('DATABASE_URL', ['postgres:', 'postgresql:']);
  const databaseReadUrl = url('DATABASE_READ_URL', ['postgres:', 'postgresql:']);
  if (databaseReadUrl !== undefined && databaseUrl === undefined)
    problems.push('DATABASE_READ_URL needs DATABASE_URL: the embedded database has no replica');
  return {
    databaseUrl,
    databaseReadUrl,
    databasePoolSize: int('DATABASE_POOL_SIZE', 10, 1, 500),
    dbStatementTimeoutMs: int('DB_STATEMENT_TIMEOUT_MS', DEFAULT_DB_STATEMENT_TIMEOUT_MS, 0, 3_600_000),
  };
}
