import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { PG_POOL } from './pg-pool.js';

/** The pool of the streaming replica (DATABASE_READ_URL), or null: every read goes to the primary. */
export const REPLICA_POOL = Symbol('REPLICA_POOL');

/**
 * Where the reads that tolerate a replica's lag go (decision 0033): the replica when DATABASE_READ_URL is
 * set, else the primary's pool. The one place that chooses; a service asks for it only for a read listed as
 * replica-tolerant in 0033 (lists, statements, balances at an instant). Anything read-your-writes, the balance
 * before a transfer, idempotent replays and the token endpoint read the primary through TypeORM as before.
 */
@Injectable()
export class ReadDatabase implements OnApplicationShutdown {
  constructor(
    @Inject(PG_POOL) private readonly primary: pg.Pool,
    @Inject(REPLICA_POOL) private readonly replica: pg.Pool | null,
  ) {}

  /** True when the reads go to a replica. */
  get onReplica(): boolean {
    return this.replica !== null;
  }

  /**
   * One read-only statement; its rows. With `name`, a named statement: parsed once per connection and, once
   * PostgreSQL finds its generic plan as cheap as the custom ones (plan_cache_mode auto), planned once too. A
   * name stands for one text only (see statementName).
   */
  async query<T>(sql: string, params: unknown[], name?: string): Promise<T[]> {
    return run<T>(this.replica ?? this.primary, sql, params, name);
  }

  /**
   * The same read on the primary, whatever DATABASE_READ_URL says. Only for a read whose own answer shows that the
   * replica has not replayed far enough for it: a statement's later page, when the replica lacks the last posting
   * page 1 read (decision 0077, amended 2026-12-02). Everything else that must read the primary reads it through
   * TypeORM (decision 0033).
   */
  async queryPrimary<T>(sql: string, params: unknown[], name?: string): Promise<T[]> {
    return run<T>(this.primary, sql, params, name);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.replica?.end();
  }
}

async function run<T>(pool: pg.Pool, sql: string, params: unknown[], name?: string): Promise<T[]> {
  const result = await (name === undefined
    ? pool.query(sql, params)
    : pool.query({ name, text: sql, values: params }));
  return result.rows as T[];
}
