import {
  Column,
  CreateDateColumn,
  Entity,
  JoinColumn,
  OneToOne,
  PrimaryColumn,
  UpdateDateColumn,
  type Relation,
} from 'typeorm';
import { CompanyEntity } from './company.entity.js';

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
