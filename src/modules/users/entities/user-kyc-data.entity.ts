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
import { UserEntity } from './user.entity.js';

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
