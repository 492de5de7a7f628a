import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  OneToOne,
  PrimaryColumn,
  Unique,
  UpdateDateColumn,
  type Relation,
} from 'typeorm';
import { ApplicationEntity } from '#modules/apps/entities/application.entity.js';
import { LedgerAccountEntity } from '../../ledger/entities/ledger.entities.js';
import { SchemaDeclaration } from '#common/database/schema-declaration.js';

export type AccountStatus = 'ACTIVE' | 'INACTIVE' | 'PENDING' | 'DELETED';
export type FeeType = 'FIXED' | 'PERCENTAGE';

/** A wallet account: its money lives in the ledger account of the same id. */
@Entity({ name: 'wallet_accounts' })
@Unique('UQ_wallet_accounts_cvu', ['cvu'])
@Check('CHK_wallet_accounts_status', `"status" IN ('ACTIVE', 'INACTIVE', 'PENDING', 'DELETED')`)
@Check('CHK_wallet_accounts_owner_type', `"owner_type" IN ('USER', 'COMPANY')`)
@Check('CHK_wallet_accounts_fee_type', `"fee_type" IN ('FIXED', 'PERCENTAGE')`)
// lower(alias): an expression index the migration owns (TypeORM cannot describe it).
@Index('uq_wallet_accounts_alias', { synchronize: false })
@Index('uq_wallet_accounts_owner', ['appId', 'ownerId'], { unique: true, where: `"status" <> 'DELETED'` })
export class WalletAccountEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_wallet_accounts' }) id: string;
  @Column('uuid', { name: 'app_id' }) appId: string;
  @Column('text', { name: 'owner_type' }) ownerType: 'USER' | 'COMPANY';
  @Column('uuid', { name: 'owner_id' }) ownerId: string;
  @Column('text') cvu: string;
  @Column('text') alias: string;
  @Column('text') currency: string;
  @Column('text', { default: 'ACTIVE' }) status: AccountStatus;
  @Column('text', { nullable: true }) name: string | null;
  @Column('text', { nullable: true }) nationality: string | null;
  @Column('numeric', { name: 'monthly_deposit_limit', precision: 24, scale: 6 }) monthlyDepositLimit: string;
  @Column('numeric', { name: 'monthly_withdraw_limit', precision: 24, scale: 6 })
  monthlyWithdrawLimit: string;
  @Column('numeric', { name: 'annual_deposit_limit', precision: 24, scale: 6 }) annualDepositLimit: string;
  @Column('numeric', { name: 'annual_withdraw_limit', precision: 24, scale: 6 }) annualWithdrawLimit: string;
  @Column('uuid', { name: 'limits_id' }) limitsId: string;
  @Column('text', { name: 'fee_type', default: 'FIXED' }) feeType: FeeType;
  @Column('numeric', { name: 'fee_amount', precision: 24, scale: 6, default: 0 }) feeAmount: string;
  @Column('uuid', { name: 'fees_id' }) feesId: string;
  @Column('uuid', { name: 'operado_id' }) operadoId: string;
  /** Millisecond precision: the keyset cursor carries a JS Date. */
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
  @Column('timestamptz', { name: 'deleted_at', nullable: true }) deletedAt: Date | null;

  @OneToOne(() => LedgerAccountEntity)
  @JoinColumn({ name: 'id', foreignKeyConstraintName: 'FK_wallet_accounts_ledger' })
  ledger?: Relation<LedgerAccountEntity>;

  @ManyToOne(() => ApplicationEntity)
  @JoinColumn({ name: 'app_id', foreignKeyConstraintName: 'FK_wallet_accounts_app' })
  application?: Relation<ApplicationEntity>;
}

/** Deposited and withdrawn amounts of one account in one period (`M2026-11`, `Y2026`). */
@SchemaDeclaration({
  name: 'operated_amounts',
  writtenBy: 'the function wallet_add_operated (AccountLimitsService.addOperated and the transfer functions)',
})
export class OperatedAmountEntity {
  @PrimaryColumn('uuid', { name: 'account_id', primaryKeyConstraintName: 'PK_operated_amounts' })
  accountId: string;
  @PrimaryColumn('text', { primaryKeyConstraintName: 'PK_operated_amounts' }) period: string;
  @Column('numeric', { precision: 24, scale: 6, default: 0 }) deposit: string;
  @Column('numeric', { precision: 24, scale: 6, default: 0 }) withdraw: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;

  @ManyToOne(() => WalletAccountEntity)
  @JoinColumn({ name: 'account_id', foreignKeyConstraintName: 'FK_operated_amounts_account' })
  account?: Relation<WalletAccountEntity>;
}
