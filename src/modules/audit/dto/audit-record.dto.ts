import { ApiProperty } from '@nestjs/swagger';
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

/** One audit record: ids and route templates, never personal data. */
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
    description: "the application's id, the subject's uuid, the operator's OS user or the component",
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
  @ApiProperty({ description: 'created, updated, unchanged, deleted, read, or the state reached' })
  outcome: string;
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'X-Request-Id of the request; null for the CLI and workers',
  })
  requestId: string | null;
}
