import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, type Relation } from 'typeorm';
import { ApplicationEntity } from '#modules/apps/entities/application.entity.js';
import { OwnerColumns } from '#modules/kyc/owners/owner.columns.js';

/** A company of an application. Deletion is soft: the row stays for audit. */
@Entity({ name: 'companies' })
@Index('uq_companies_app_tax', ['appId', 'taxType', 'taxValue'], {
  unique: true,
  where: '"deleted_at" IS NULL',
})
@Index('idx_companies_app_created', ['appId', 'createdAt', 'id'])
export class CompanyEntity extends OwnerColumns {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_companies' })
  id: string;

  @Column('text') name: string;
  @Column('text', { name: 'legal_name' }) legalName: string;
  @Column('text', { name: 'trade_name' }) tradeName: string;
  @Column('text', { name: 'company_type' }) companyType: string;
  @Column('text', { name: 'tax_type' }) taxType: 'CUIT' | 'CNPJ';
  @Column('text', { name: 'tax_value' }) taxValue: string;
  @Column('text', { name: 'tax_condition' }) taxCondition: 'VAT_REGISTERED' | 'OTHERS';
  @Column('text', { name: 'operation_country' }) operationCountry: string;

  @ManyToOne(() => ApplicationEntity)
  @JoinColumn({ name: 'app_id', foreignKeyConstraintName: 'FK_companies_app' })
  application?: Relation<ApplicationEntity>;
}
