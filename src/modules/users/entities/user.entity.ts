import {
  Column,
  CreateDateColumn,
  DeleteDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
  type Relation,
} from 'typeorm';
import { ApplicationEntity } from '../../../apps/entities/application.entity.js';
import type { LegalAddress } from '../../dto/legal-address.dto.js';

/** A natural person of an application. Deletion is soft: the row stays for audit. */
@Entity({ name: 'users' })
@Index('uq_users_app_tax_id', ['appId', 'taxId'], { unique: true, where: '"deleted_at" IS NULL' })
@Index('idx_users_app_created', ['appId', 'createdAt', 'id'])
export class UserEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_users' })
  id: string;

  @Column('uuid', { name: 'app_id' })
  appId: string;

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
  @Column('jsonb', { name: 'legal_address' }) legalAddress: LegalAddress;

  /** Millisecond precision: the keyset cursor carries a JS Date. */
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @DeleteDateColumn({ name: 'deleted_at', type: 'timestamptz' })
  deletedAt: Date | null;

  @ManyToOne(() => ApplicationEntity)
  @JoinColumn({ name: 'app_id', foreignKeyConstraintName: 'FK_users_app' })
  application?: Relation<ApplicationEntity>;
}
