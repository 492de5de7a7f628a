import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, type Relation } from 'typeorm';
import { ApplicationEntity } from '#modules/apps/entities/application.entity.js';
import { OwnerColumns } from '#modules/kyc/owners/owner.columns.js';

/** A natural person of an application. Deletion is soft: the row stays for audit. */
@Entity({ name: 'users' })
@Index('uq_users_app_tax_id', ['appId', 'taxId'], { unique: true, where: '"deleted_at" IS NULL' })
@Index('idx_users_app_created', ['appId', 'createdAt', 'id'])
export class UserEntity extends OwnerColumns {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_users' })
  id: string;

  @Column('text', { name: 'first_name' }) firstName: string;
  @Column('text', { name: 'last_name' }) lastName: string;
  @Column('date') birthdate: string;
  @Column('text') sex: string;
  @Column('text', { name: 'civil_status' }) civilStatus: string;
  @Column('text') nationality: string;
  @Column('text', { nullable: true }) email: string | null;
  @Column('text', { name: 'legal_name', nullable: true }) legalName: string | null;
  @Column('text', { name: 'tax_id_type' }) taxIdType: string;
  @Column('text', { name: 'tax_id' }) taxId: string;
  @Column('text', { name: 'tax_condition' }) taxCondition: string;
  @Column('text') category: string;
  @Column('boolean', { name: 'tax_exempt' }) taxExempt: boolean;

  @ManyToOne(() => ApplicationEntity)
  @JoinColumn({ name: 'app_id', foreignKeyConstraintName: 'FK_users_app' })
  application?: Relation<ApplicationEntity>;
}
