import {
  Column,
  CreateDateColumn,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
  type Relation,
} from 'typeorm';
import { SchemaDeclaration } from '#common/database/schema-declaration.js';
import { TransferEntity } from './transfer.entity.js';

/** Every status a transfer went through, with its time. */
@SchemaDeclaration({
  name: 'transfer_status_history',
  writtenBy:
    "TransferWriter.moveStatus (the clearing steps; a transfer's creation is implied by its row: the view transfer_status_path)",
})
@Index('idx_transfer_status_history_transfer', ['transferId', 'id'])
export class TransferStatusHistoryEntity {
  @PrimaryGeneratedColumn('increment', {
    type: 'bigint',
    primaryKeyConstraintName: 'PK_transfer_status_history',
  })
  id: string;

  @Column('uuid', { name: 'transfer_id' }) transferId: string;
  @Column('text', { name: 'from_status', nullable: true }) fromStatus: string | null;
  @Column('text', { name: 'to_status' }) toStatus: string;
  @CreateDateColumn({ name: 'at', type: 'timestamptz' }) at: Date;

  @ManyToOne(() => TransferEntity)
  @JoinColumn({ name: 'transfer_id', foreignKeyConstraintName: 'FK_transfer_status_history_transfer' })
  transfer?: Relation<TransferEntity>;
}
