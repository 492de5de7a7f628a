import {
  Check,
  Column,
  CreateDateColumn,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
  type Relation,
} from 'typeorm';
import { SchemaDeclaration } from '#common/database/schema-declaration.js';
import { WalletAccountEntity } from '#modules/wallet/accounts/entities/wallet-account.entity.js';
import type { TransferStatus } from '../transfer-status.js';

/** One side of a movement of money: an account's DEPOSIT or WITHDRAW. */
@SchemaDeclaration({
  name: 'transfers',
  writtenBy:
    'TransferWriter and the functions it calls (wallet_create_transfers, wallet_write_internal, wallet_reverse_transfer)',
})
@Check('CHK_transfers_movement_type', `"movement_type" IN ('DEPOSIT', 'WITHDRAW')`)
@Check('CHK_transfers_route', `"route" IN ('INTERNAL', 'EXTERNAL')`)
@Check(
  'CHK_transfers_status',
  `"status" IN ('COMMITING', 'INICIADO', 'EN_CURSO', 'ERROR_DATOS', 'SIN_GARANTIA', 'ERROR_ACREDITACION', 'ACREDITADO')`,
)
@Index('idx_transfers_app_created', ['appId', 'createdAt', 'id'])
@Index('idx_transfers_account_created', ['accountId', 'createdAt', 'id'])
@Index('idx_transfers_in_flight', ['updatedAt'], {
  where: `"status" IN ('COMMITING', 'INICIADO', 'EN_CURSO')`,
})
/** The in-flight sum of the limit check (wallet_check_limits) reads only these few rows. */
@Index('idx_transfers_account_in_flight', ['accountId', 'movementType'], {
  where: `"status" IN ('COMMITING', 'INICIADO', 'EN_CURSO')`,
})
/** The list filtered by a failure status or a movement type (decision 0075). */
@Index('idx_transfers_app_failed_created', ['appId', 'createdAt', 'id'], {
  where: `"status" IN ('ERROR_DATOS', 'SIN_GARANTIA', 'ERROR_ACREDITACION')`,
})
/** The reversals (and returns from the rail) of a transfer row: the reversed total and GET …/reversals. */
@Index('idx_transfers_reversal_of', ['reversalOf'], { where: `"reversal_of" IS NOT NULL` })
export class TransferEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_transfers' }) id: string;
  @Column('uuid', { name: 'app_id' }) appId: string;
  @Column('uuid', { name: 'account_id' }) accountId: string;
  @Column('text', { name: 'movement_type' }) movementType: 'DEPOSIT' | 'WITHDRAW';
  @Column('text') status: TransferStatus;
  @Column('text') route: 'INTERNAL' | 'EXTERNAL';
  @Column('text', { name: 'counterparty_name' }) counterpartyName: string;
  @Column('text', { name: 'counterparty_tax_id' }) counterpartyTaxId: string;
  @Column('text', { name: 'counterparty_identifier_type' }) counterpartyIdentifierType: 'CBU' | 'CVU';
  @Column('text', { name: 'counterparty_identifier' }) counterpartyIdentifier: string;
  @Column('text', { name: 'counterparty_branch', nullable: true }) counterpartyBranch: string | null;
  @Column('uuid', { name: 'counterparty_account_id', nullable: true }) counterpartyAccountId: string | null;
  @Column('uuid', { name: 'linked_transfer_id', nullable: true }) linkedTransferId: string | null;
  @Column('numeric', { precision: 24, scale: 6 }) amount: string;
  @Column('text') currency: string;
  @Column('numeric', { precision: 24, scale: 6, default: 0 }) fees: string;
  @Column('numeric', { precision: 24, scale: 6, default: 0 }) taxes: string;
  @Column('text') concept: string;
  @Column('text', { nullable: true }) summary: string | null;
  @Column('text', { nullable: true }) description: string | null;
  @Column('text', { name: 'clearing_id', nullable: true }) clearingId: string | null;
  /** The original row of the same account that this transfer gives money back for (docs/decisions/0031). */
  @Column('uuid', { name: 'reversal_of', nullable: true }) reversalOf: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;

  @ManyToOne(() => WalletAccountEntity)
  @JoinColumn({ name: 'account_id', foreignKeyConstraintName: 'FK_transfers_account' })
  account?: Relation<WalletAccountEntity>;

  @ManyToOne(() => TransferEntity)
  @JoinColumn({ name: 'reversal_of', foreignKeyConstraintName: 'FK_transfers_reversal_of' })
  reversed?: Relation<TransferEntity>;
}
