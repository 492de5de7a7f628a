import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { AuthClient } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ErrorResponses } from '#common/http/openapi.js';
import { DATE_TIME_QUERY_SCHEMA } from '#common/http/instant.js';
import { CURSOR_SCHEMA, Paginated, type Page } from '#common/http/pagination.js';
import { AuditRecordDto, AuditQueryDto } from './dto/audit-record.dto.js';
import { AuditService } from './audit.service.js';

@ApiTags('Audit')
@Controller('audit')
@ErrorResponses()
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @AuthClient()
  @Paginated()
  @ApiOperation({
    summary:
      "The application's audit trail, oldest first: who changed or read what, when, with what outcome, in which request",
    operationId: 'listAuditRecords',
  })
  @ApiQuery({
    name: 'resource',
    required: false,
    description: 'only records of this resource: its id (a uuid in any case, or a key id as given)',
    schema: { type: 'string', maxLength: 200 },
  })
  @ApiQuery({
    name: 'from',
    required: false,
    description: 'RFC 3339 date-time with an offset (2026-11-25T00:00:00Z): records at or after this time',
    schema: DATE_TIME_QUERY_SCHEMA,
  })
  @ApiQuery({
    name: 'to',
    required: false,
    description:
      'RFC 3339 date-time with an offset (a bare date is refused): records before this time; not before from',
    schema: DATE_TIME_QUERY_SCHEMA,
  })
  @ApiQuery({
    name: 'after',
    required: false,
    description: 'the X-Next-Cursor of the previous page (the same as `cursor`)',
    schema: CURSOR_SCHEMA,
  })
  @ApiOkResponse({ type: [AuditRecordDto] })
  list(
    @CurrentPrincipal() principal: Principal,
    @Query() query: AuditQueryDto,
  ): Promise<Page<AuditRecordDto>> {
    return this.audit.forApplication(principal.appId, query);
  }
}
