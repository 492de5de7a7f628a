import { Column, CreateDateColumn, Index, PrimaryColumn } from 'typeorm';
import { SchemaDeclaration } from '#common/database/schema-declaration.js';

/**
 * An Idempotency-Key with the answer it got: POST /wallet/transactions (the key), a reversal (`reversal <key>`), a
 * rail reference (`inbound …`, `return …`) and POST /mobile/sms (`sms <key>[ <subject>]`, decision 0103).
 */
@SchemaDeclaration({
  name: 'idempotency_keys',
  writtenBy:
    'the function wallet_create_transfers (claim and answer), SmsService (claim with answer); IdempotencyKeyPruner deletes old keys',
})
@Index('idx_idempotency_keys_created', ['createdAt'])
export class IdempotencyKeyEntity {
  @PrimaryColumn('uuid', { name: 'app_id', primaryKeyConstraintName: 'PK_idempotency_keys' }) appId: string;
  @PrimaryColumn('text', { primaryKeyConstraintName: 'PK_idempotency_keys' }) key: string;
  @Column('text', { name: 'request_hash' }) requestHash: string;
  @Column('integer', { name: 'response_status', nullable: true }) responseStatus: number | null;
  @Column('jsonb', { name: 'response_body', nullable: true }) responseBody: unknown;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
