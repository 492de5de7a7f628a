import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** A client assertion's jti, kept until the assertion expires, so it cannot be replayed. */
@Entity({ name: 'used_assertions' })
export class UsedAssertionEntity {
  @PrimaryColumn('uuid', { name: 'app_id', primaryKeyConstraintName: 'PK_used_assertions' })
  appId: string;

  @PrimaryColumn('text', { primaryKeyConstraintName: 'PK_used_assertions' })
  jti: string;

  @Index('idx_used_assertions_expires_at')
  @Column('timestamptz', { name: 'expires_at' })
  expiresAt: Date;
}
