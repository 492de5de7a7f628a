import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ValidationFailedError } from '#common/errors/domain-errors.js';
import { instantMicros, parseInstant } from '#common/http/instant.js';
import {
  decodeMicrosecondCursor,
  DEFAULT_PAGE_SIZE,
  encodeMicrosecondCursor,
  toKeysetPage,
  type Page,
} from '#common/http/pagination.js';
import type { AuditRecordDto } from './dto/audit-record.dto.js';
import { auditResourceId } from './audit-trail.js';

interface AuditRow {
  id: string;
  at: Date;
  app_id: string | null;
  principal_type: AuditRecordDto['principalType'];
  principal: string;
  action: string;
  resource_type: string;
  resource_id: string;
  outcome: string;
  request_id: string | null;
  /** `at` in microseconds since the epoch (text: a bigint), the cursor's position. */
  at_us: string;
}

export interface AuditQuery {
  resource?: string;
  from?: string;
  to?: string;
  after?: string;
  cursor?: string;
  limit?: number;
}

const COLUMNS = `id::text AS id, at, app_id, principal_type, principal, action, resource_type, resource_id, outcome,
  request_id, (extract(epoch FROM at) * 1000000)::bigint::text AS at_us`;

/**
 * The principal an application is shown for an operator's command (`cli`): the OS user who ran it is the login of
 * the operator's staff, not the application's to know (decision 0082). The operator's `audit list` shows it.
 */
export const CLI_PRINCIPAL_FOR_APPLICATIONS = 'operator';

/** The cursor: (at in microseconds, id) of the last record served. */
const encode = (row: AuditRow) => encodeMicrosecondCursor(row.at_us, row.id);
/** A record id that fits a bigint (a 19-digit one may not: 500). */
const RECORD_ID = /^\d{1,18}$/;

/**
 * The audit trail's reading side (docs/decisions/0032-audit-trail.md). Records are written by `auditAppend` in
 * the changing transaction (a signing key's, which is not in the database, by SigningKeyAuditService).
 */
@Injectable()
export class AuditService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * `GET /v1/audit`: the application's own records, as `forOperator` pages them, with an operator's command's
   * principal as CLI_PRINCIPAL_FOR_APPLICATIONS. The stored rows are append-only and keep the OS user.
   */
  forApplication(appId: string, query: AuditQuery): Promise<Page<AuditRecordDto>> {
    return this.list(appId, query, (row) =>
      view(row.principal_type === 'cli' ? { ...row, principal: CLI_PRINCIPAL_FOR_APPLICATIONS } : row),
    );
  }

  /** `audit list`: the records as stored, of one application or (appId undefined) of all of them. */
  forOperator(appId: string | undefined, query: AuditQuery): Promise<Page<AuditRecordDto>> {
    return this.list(appId, query, view);
  }

  /**
   * Records oldest first by (at, id), a page at a time: of one application (`appId`; the CLI may leave it out
   * for all of them), of one resource (`resource`: its id), from `from` (inclusive) to `to` (exclusive), each shown
   * by `show`.
   */
  private async list(
    appId: string | undefined,
    query: AuditQuery,
    show: (row: AuditRow) => AuditRecordDto,
  ): Promise<Page<AuditRecordDto>> {
    if (query.after !== undefined && query.cursor !== undefined && query.after !== query.cursor) {
      throw ValidationFailedError.single(
        'after',
        'invalid',
        'after and cursor name the same position; give one',
      );
    }
    const from = query.from === undefined ? undefined : parseInstant(query.from, 'from');
    const to = query.to === undefined ? undefined : parseInstant(query.to, 'to');
    // A window that ends before it starts is a mistake, refused as a statement's period is (decision 0063).
    if (from !== undefined && to !== undefined && instantMicros(to) < instantMicros(from)) {
      throw ValidationFailedError.single('to', 'invalid', 'to must not be before from');
    }
    const cursor = query.after ?? query.cursor;
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const params: unknown[] = [limit + 1];
    const where: string[] = [];
    const add = (condition: (index: number) => string, value: unknown) => {
      params.push(value);
      where.push(condition(params.length));
    };
    if (appId !== undefined) add((i) => `app_id = $${i}`, appId);
    if (query.resource !== undefined) add((i) => `resource_id = $${i}`, auditResourceId(query.resource));
    if (from) add((i) => `at >= $${i}`, from);
    if (to) add((i) => `at < $${i}`, to);
    if (cursor !== undefined) {
      const position = decodeMicrosecondCursor(
        cursor,
        query.after !== undefined ? 'after' : 'cursor',
        RECORD_ID,
      );
      params.push(position.micros, position.id);
      where.push(
        `(at, id) > ('epoch'::timestamptz + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length}::bigint)`,
      );
    }
    const rows = (await this.dataSource.query(
      `SELECT ${COLUMNS} FROM audit_records ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY at, id LIMIT $1`,
      params,
    )) as AuditRow[];
    return toKeysetPage(rows, limit, show, encode);
  }
}

function view(row: AuditRow): AuditRecordDto {
  return {
    id: row.id,
    at: row.at.toISOString(),
    appId: row.app_id,
    principalType: row.principal_type,
    principal: row.principal,
    action: row.action,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    outcome: row.outcome,
    requestId: row.request_id,
  };
}
