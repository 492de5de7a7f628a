import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { MaxLength } from '#common/http/validators.js';
import { PageQueryDto } from '#common/http/pagination.js';

/** `GET /v1/audit?resource=&from=&to=&after=&limit=` (`cursor` too, as on every list route). */
export class AuditQueryDto extends PageQueryDto {
  @IsOptional()
  @MaxLength(200)
  @IsString()
  resource?: string;

  /** RFC 3339 date-times, in a statement's from/to form (checked by the service, so the error names the parameter). */
  @IsOptional()
  @MaxLength(64)
  @IsString()
  from?: string;

  @IsOptional()
  @MaxLength(64)
  @IsString()
  to?: string;

  @IsOptional()
  @MaxLength(200)
  @IsString()
  after?: string;
}

/**
 * Every outcome the trail writes (auditAppend's callers and the SQL functions: audit_append's callers and
 * wallet_write_internal), for the OpenAPI document. `test/audit-trail.e2e-spec.ts` checks every outcome its cases
 * leave against this text.
 */
export const AUDIT_OUTCOMES = [
  'What happened, one of:',
  '`created`;',
  '`updated`;',
  '`unchanged` (a change that sent what was stored already);',
  '`deleted` (an account, a user or a company);',
  '`read` (KYC data, KYC history, a document’s content);',
  '`balance set`, `limits set`, `fees set` (an account);',
  '`webhook set`, `disabled`, `enabled` (an application);',
  '`revoked` (an application key);',
  '`retired` (a signing key);',
  '`replayed` (a webhook event sent again);',
  '`paid out` (a rail return held for a closed account, paid out) and `unclaimed return paid in` (the account it',
  'was paid into);',
  '`submitted <STEP>` (a KYC session’s step submitted) and `<STEP> SUCCESS` or `<STEP> FAILED` (the provider’s',
  'verdict), STEP being DOCUMENT_FRONT, DOCUMENT_BACK, SELFIE or GOVERNMENTAL_CHECK_SELFIE;',
  'a transfer’s status: `ACREDITADO` (an internal transfer, a reversal, a return or an inbound credit, and the',
  'rail’s acceptance of an external one), `INICIADO` (an external transfer sent to the rail), or the rail’s',
  'refusal `ERROR_DATOS`, `SIN_GARANTIA` or `ERROR_ACREDITACION`.',
].join(' ');

/** One audit record: ids and route templates, never personal data. */
@ApiSchema({ name: 'AuditRecord' })
export class AuditRecordDto {
  @ApiProperty({ description: 'the record number (decimal text), in order of writing' }) id: string;
  @ApiProperty({ format: 'date-time', description: 'when the change (its transaction) happened' }) at: string;
  @ApiProperty({ format: 'uuid', nullable: true, type: String }) appId: string | null;
  @ApiProperty({
    enum: ['client', 'subject', 'cli', 'system'],
    description:
      'client: the application (access token); subject: a user or company token; cli: an operator; system: a worker',
  })
  principalType: 'client' | 'subject' | 'cli' | 'system';
  @ApiProperty({
    description:
      "the application's id, the subject's uuid, `operator` (an operator's command: who ran it is the operator's to know) or the component",
  })
  principal: string;
  @ApiProperty({
    description: 'the route template (`PATCH /v1/users/{uuid}`) or the command (`apps create`)',
  })
  action: string;
  @ApiProperty({
    description: 'user, company, kyc_data, kyc_history, document, kyc_session, account, transfer, …',
  })
  resourceType: string;
  @ApiProperty({ description: 'the resource’s id (a uuid, or a key id)' }) resourceId: string;
  @ApiProperty({ description: AUDIT_OUTCOMES })
  outcome: string;
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'X-Request-Id of the request; null for the CLI and workers',
  })
  requestId: string | null;
}
