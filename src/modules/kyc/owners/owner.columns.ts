import { Column, CreateDateColumn, DeleteDateColumn, UpdateDateColumn } from 'typeorm';
import type { LegalAddress } from '../dto/legal-address.dto.js';

/**
 * The columns a user and a company share: the application, the legal address
 * and the timestamps of a soft-deleted row. Each entity declares its own
 * primary key and application relation, whose constraint names are its own.
 */
export abstract class OwnerColumns {
  @Column('uuid', { name: 'app_id' })
  appId: string;

  @Column('jsonb', { name: 'legal_address' }) legalAddress: LegalAddress;

  /** Millisecond precision: the keyset cursor carries a JS Date. */
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @DeleteDateColumn({ name: 'deleted_at', type: 'timestamptz' })
  deletedAt: Date | null;
}
