import { Column, Index, PrimaryColumn } from 'typeorm';
import { SchemaDeclaration } from '../../database/schema-declaration.js';

/** A fixed-window rate-limit counter shared by every API process (UNLOGGED table; decision 0033). */
@SchemaDeclaration({
  name: 'rate_limit_counters',
  writtenBy: 'PostgresRateLimitStore (one upsert per counted request; it also deletes ended windows)',
})
@Index('idx_rate_limit_counters_reset', ['resetAt'])
export class RateLimitCounterEntity {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'PK_rate_limit_counters' }) key: string;
  @Column('integer') hits: number;
  @Column('timestamptz', { name: 'reset_at' }) resetAt: Date;
}
