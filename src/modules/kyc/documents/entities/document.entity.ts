import { Check, Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/** A KYC document of a user or company; the bytes are in the document storage. */
@Entity({ name: 'documents' })
@Check('CHK_documents_owner_type', `"owner_type" IN ('USER', 'COMPANY')`)
@Index('idx_documents_owner', ['appId', 'ownerId', 'createdAt', 'id'])
@Index('uq_documents_storage_key', ['storageKey'], { unique: true })
export class DocumentEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'PK_documents' })
  id: string;

  @Column('uuid', { name: 'app_id' }) appId: string;
  @Column('text', { name: 'owner_type' }) ownerType: 'USER' | 'COMPANY';
  @Column('uuid', { name: 'owner_id' }) ownerId: string;
  @Column('text') name: string;
  @Column('text', { name: 'document_type' }) documentType: string;
  /** Detected from the bytes, never taken from the client. */
  @Column('text', { name: 'content_type' }) contentType: string;
  @Column('integer') size: number;
  @Column('text') sha256: string;
  @Column('text', { name: 'storage_key' }) storageKey: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
