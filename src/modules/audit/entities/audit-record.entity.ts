import { Check, Column, CreateDateColumn, Index, PrimaryGeneratedColumn } from 'typeorm';
import { SchemaDeclaration } from '#common/database/schema-declaration.js';

/**
 * One audit record (docs/decisions/0032-audit-trail.md): who did what to which resource, with what outcome, in
 * which request. Ids and route templates only, never personal data. Append-only: a trigger refuses UPDATE,
 * DELETE and TRUNCATE.
 */
@SchemaDeclaration({
  name: 'audit_records',
  writtenBy:
    'audit_append (src/modules/audit/sql/audit_append.sql, called by AuditService.append and wallet_create_transfers) and wallet_write_internal',
})
@Check('CHK_audit_records_principal_type', `"principal_type" IN ('client', 'subject', 'cli', 'system')`)
@Index('idx_audit_records_app_at', ['appId', 'at', 'id'])
@Index('idx_audit_records_app_resource', ['appId', 'resourceId', 'at', 'id'])
@Index('idx_audit_records_at', ['at', 'id'])
export class AuditRecordEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'PK_audit_records' })
  id: string;

  @CreateDateColumn({ name: 'at', type: 'timestamptz' }) at: Date;
  /** The application concerned; null for an operator's change that concerns none (a signing key). */
  @Column('uuid', { name: 'app_id', nullable: true }) appId: string | null;
  @Column('text', { name: 'principal_type' }) principalType: 'client' | 'subject' | 'cli' | 'system';
  /** The application id, the subject's uuid, the OS user or the component. */
  @Column('text') principal: string;
  /** `METHOD /v1/route/{param}` or the CLI command. */
  @Column('text') action: string;
  @Column('text', { name: 'resource_type' }) resourceType: string;
  @Column('text', { name: 'resource_id' }) resourceId: string;
  @Column('text') outcome: string;
  @Column('text', { name: 'request_id', nullable: true }) requestId: string | null;
}
