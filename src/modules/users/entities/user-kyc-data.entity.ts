import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  OneToOne,
  PrimaryColumn,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
  type Relation,
} from 'typeorm';
import { CompanyEntity } from '../../companies/entities/company.entity.js';
import { UserEntity } from '../../users/entities/user.entity.js';

/** A user's KYC data (UserKYCData). */
@Entity({ name: 'user_kyc_data' })
export class UserKycDataEntity {
  @PrimaryColumn('uuid', { name: 'user_id', primaryKeyConstraintName: 'PK_user_kyc_data' })
  userId: string;

  @Column('uuid') id: string;
  @Column('uuid', { name: 'app_id' }) appId: string;
  @Column('text', { name: 'civil_status' }) civilStatus: string;
  @Column('boolean', { name: 'is_pep', nullable: true }) isPep: boolean | null;
  @Column('boolean', { name: 'is_soauif', nullable: true }) isSOAUIF: boolean | null;
  @Column('boolean', { name: 'is_black_listed', nullable: true }) isBlackListed: boolean | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;

  @OneToOne(() => UserEntity)
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'FK_user_kyc_data_user' })
  user?: Relation<UserEntity>;
}

/** A company's KYC data: four free-form sections. */
@Entity({ name: 'company_kyc_data' })
export class CompanyKycDataEntity {
  @PrimaryColumn('uuid', { name: 'company_id', primaryKeyConstraintName: 'PK_company_kyc_data' })
  companyId: string;

  @Column('uuid', { name: 'app_id' }) appId: string;
  @Column('jsonb', { name: 'datos_basicos', nullable: true }) datosBasicos: Record<string, unknown> | null;
  @Column('jsonb', { name: 'estructura_corporativa', nullable: true })
  estructuraCorporativa: Record<string, unknown> | null;

  @Column('jsonb', { name: 'gestion_de_riesgo', nullable: true }) gestionDeRiesgo: Record<
    string,
    unknown
  > | null;
  @Column('jsonb', { name: 'monitoreo_de_cumplimiento', nullable: true })
  monitoreoDeCumplimiento: Record<string, unknown> | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;

  @OneToOne(() => CompanyEntity)
  @JoinColumn({ name: 'company_id', foreignKeyConstraintName: 'FK_company_kyc_data_company' })
  company?: Relation<CompanyEntity>;
}

/** Every change of KYC data: who, when, what (append-only). */
@Entity({ name: 'kyc_history' })
@Check('CHK_kyc_history_owner_type', `"owner_type" IN ('USER', 'COMPANY')`)
@Index('idx_kyc_history_owner', ['appId', 'ownerId', 'id'])
export class KycHistoryEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'PK_kyc_history' })
  id: string;

  @Column('uuid', { name: 'app_id' }) appId: string;
  @Column('text', { name: 'owner_type' }) ownerType: 'USER' | 'COMPANY';
  @Column('uuid', { name: 'owner_id' }) ownerId: string;
  /** The section changed (company) or `kycData` (user). */
  @Column('text') section: string;
  @Column('jsonb', { nullable: true }) previous: unknown;
  @Column('jsonb') current: unknown;
  /** `client:<appId>` or `subject:<uuid>`. */
  @Column('text') actor: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
