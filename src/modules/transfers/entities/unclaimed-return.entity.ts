import { Check, Column, Index, JoinColumn, ManyToOne, PrimaryColumn, type Relation } from 'typeorm';
import { SchemaDeclaration } from '#common/database/schema-declaration.js';
import { WalletAccountEntity } from '#modules/wallet/accounts/entities/wallet-account.entity.js';
import { TransferEntity } from './transfer.entity.js';

/**
 * A return from the rail whose account was closed (docs/decisions/0062-returns-to-closed-accounts.md): its money
 * sits in the system account UNCLAIMED_RETURNS until an operator pays it out. The return itself is the transfer
 * row (a DEPOSIT of the closed account: amount, currency, application, account); this row only says that its
 * money is held, and where it went once paid out.
 */
@SchemaDeclaration({
  name: 'unclaimed_returns',
  writtenBy:
    'the function wallet_reverse_transfer (a return to a closed account); UnclaimedReturnsService (pay-out)',
})
@Check('CHK_unclaimed_returns_paid_out', `("paid_out_at" IS NULL) = ("paid_out_to" IS NULL)`)
/** What is still held: the operator's list and the suspense account's balance. */
@Index('idx_unclaimed_returns_held', ['transferId'], { where: `"paid_out_at" IS NULL` })
export class UnclaimedReturnEntity {
  /** The return: a DEPOSIT of the closed account, reversal_of its WITHDRAW. */
  @PrimaryColumn('uuid', { name: 'transfer_id', primaryKeyConstraintName: 'PK_unclaimed_returns' })
  transferId: string;
  /** When it was paid out; null while UNCLAIMED_RETURNS holds it. */
  @Column('timestamptz', { name: 'paid_out_at', nullable: true }) paidOutAt: Date | null;
  /** The account of the same owner it was paid into. */
  @Column('uuid', { name: 'paid_out_to', nullable: true }) paidOutTo: string | null;

  @ManyToOne(() => TransferEntity)
  @JoinColumn({ name: 'transfer_id', foreignKeyConstraintName: 'FK_unclaimed_returns_transfer' })
  transfer?: Relation<TransferEntity>;

  @ManyToOne(() => WalletAccountEntity)
  @JoinColumn({ name: 'paid_out_to', foreignKeyConstraintName: 'FK_unclaimed_returns_paid_out_to' })
  paidOutAccount?: Relation<WalletAccountEntity>;
}
