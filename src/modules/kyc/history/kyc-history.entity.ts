import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { OwnerType } from '../owners/kyc-owners.port.js';

/** Every change of KYC data: who, when, what (append-only). */
@Entity({ name: 'kyc_history' })
@Check('CHK_kyc_history_owner_type', `"owner_type" IN ('USER', 'COMPANY')`)
@Index('idx_kyc_history_owner', ['appId', 'ownerId', 'id'])
export class KycHistoryEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'PK_kyc_history' })
  id: string;

  @Column('uuid', { name: 'app_id' }) appId: string;
  @Column('text', { name: 'owner_type' }) ownerType: OwnerType;
  @Column('uuid', { name: 'owner_id' }) ownerId: string;
  /** The section changed (company) or `kycData` (user). */
  @Column('text') section: string;
  @Column('jsonb', { nullable: true }) previous: unknown;
  @Column('jsonb') current: unknown;
  /** `client:<appId>` or `subject:<uuid>`. */
  @Column('text') actor: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
