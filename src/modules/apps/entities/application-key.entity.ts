import type { JWK } from 'jose';
import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  type Relation,
} from 'typeorm';
import { ApplicationEntity } from './application.entity.js';

export type ApplicationKeyStatus = 'active' | 'revoked';

/** An EC P-256 public key registered for an application; keyId is its RFC 7638 thumbprint. */
@Entity({ name: 'application_keys' })
@Check('CHK_application_keys_status', `"status" IN ('active', 'revoked')`)
export class ApplicationKeyEntity {
  @PrimaryColumn('uuid', { name: 'app_id', primaryKeyConstraintName: 'PK_application_keys' })
  appId: string;

  @PrimaryColumn('text', { name: 'key_id', primaryKeyConstraintName: 'PK_application_keys' })
  keyId: string;

  @Column('jsonb', { name: 'public_jwk' })
  publicJwk: JWK;

  @Column('text', { default: 'active' })
  status: ApplicationKeyStatus;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;

  @ManyToOne(() => ApplicationEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'app_id', foreignKeyConstraintName: 'FK_application_keys_app' })
  application?: Relation<ApplicationEntity>;
}
