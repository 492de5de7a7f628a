import type { FactoryProvider } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type pg from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/**
 * The pg Pool under TypeORM's DataSource: for statements TypeORM's query API cannot send, such as named
 * (prepared) statements on the pool's connections. The same connections as the DataSource, so no second pool.
 */
export const PG_POOL = Symbol('PG_POOL');

/** The pool of an initialised PostgreSQL DataSource; the one place that knows where TypeORM keeps it. */
export function pgPoolOf(dataSource: DataSource): pg.Pool {
  if (dataSource.options.type !== 'postgres') {
    throw new Error(`PG_POOL needs a PostgreSQL DataSource, not ${dataSource.options.type}`);
  }
  const pool: unknown = (dataSource.driver as PostgresDriver).master;
  if (!isPool(pool)) throw new Error('the PostgreSQL DataSource has no pool yet (not initialised)');
  return pool;
}

function isPool(value: unknown): value is pg.Pool {
  const candidate = value as Partial<pg.Pool> | undefined;
  return typeof candidate?.query === 'function' && typeof candidate.connect === 'function';
}

/** PG_POOL for the module that provides the DataSource (InfrastructureModule): obtained once, after it connected. */
export const pgPoolProvider: FactoryProvider<pg.Pool> = {
  provide: PG_POOL,
  inject: [getDataSourceToken()],
  useFactory: pgPoolOf,
};
