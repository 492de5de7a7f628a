import {
  Check,
  Column,
  CreateDateColumn,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  PrimaryGeneratedColumn,
  type Relation,
} from 'typeorm';
import { SchemaDeclaration } from '#common/database/schema-declaration.js';

/**
 * An account of the ledger: a wallet account (cached balance) or a system account (no cached balance). A
 * deferred constraint trigger (ledger_accounts_wallet_not_negative, decision 0037) refuses a commit that
 * leaves a wallet's balance below zero.
 */
@SchemaDeclaration({
  name: 'ledger_accounts',
  writtenBy: 'LedgerService; the functions ledger_system_account, ledger_post and wallet_create_transfers',
})
@Check('CHK_ledger_accounts_kind', `"kind" IN ('WALLET', 'SYSTEM')`)
export class LedgerAccountEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_ledger_accounts' }) id: string;
  @Column('text') kind: 'WALLET' | 'SYSTEM';
  /**
   * `WALLET`, or the system account's role (SETTLEMENT, FEE_REVENUE, TAX_PAYABLE, ADJUSTMENTS, HOLDS,
   * UNCLAIMED_RETURNS).
   */
  @Column('text') code: string;
  @Column('text') currency: string;
  /** NUMERIC as text: never a float. Kept for wallet accounts only. */
  @Column('numeric', { precision: 24, scale: 6, default: 0 }) balance: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}

/** One balanced change of the ledger (append-only). */
@SchemaDeclaration({
  name: 'journal_entries',
  writtenBy: 'the functions ledger_post (also through LedgerService.post) and wallet_write_internal',
})
export class JournalEntryEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_journal_entries' }) id: string;
  @Column('uuid', { name: 'app_id', nullable: true }) appId: string | null;
  @Column('text') kind: string;
  @Column('text', { nullable: true }) reference: string | null;
  @Column('text', { nullable: true }) description: string | null;
  /** `client:<appId>`, `subject:<uuid>`, `system:<component>`, or `cli:<os user>` for an operator's pay-out. */
  @Column('text') actor: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}

/** One line of an entry: a signed amount on one account (positive raises its balance). */
@SchemaDeclaration({
  name: 'postings',
  writtenBy: 'the functions ledger_post (also through LedgerService.post) and wallet_write_internal',
})
@Check('CHK_postings_amount', `"amount" <> 0`)
/** Balance as of a time and statements: an index-only range scan of one account's postings (decision 0030). */
@Index('idx_postings_account_time', ['accountId', 'createdAt', 'id', 'amount'])
@Index('idx_postings_entry', ['entryId'])
export class PostingEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'PK_postings' })
  id: string;
  @Column('uuid', { name: 'entry_id' }) entryId: string;
  @Column('uuid', { name: 'account_id' }) accountId: string;
  @Column('numeric', { precision: 24, scale: 6 }) amount: string;
  @Column('text') currency: string;
  /** When the posting was inserted, under its account's lock: the account's order of movements (decision 0030). */
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', default: () => 'clock_timestamp()' })
  createdAt: Date;

  @ManyToOne(() => JournalEntryEntity)
  @JoinColumn({ name: 'entry_id', foreignKeyConstraintName: 'FK_postings_entry' })
  entry?: Relation<JournalEntryEntity>;

  @ManyToOne(() => LedgerAccountEntity)
  @JoinColumn({ name: 'account_id', foreignKeyConstraintName: 'FK_postings_account' })
  account?: Relation<LedgerAccountEntity>;
}
