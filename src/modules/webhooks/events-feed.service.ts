import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ReadDatabase } from '#common/database/read-database.js';
import { closedSetLiteral, listFetchSize, statementName } from '#common/database/sql.js';
import { NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import {
  decodeMicrosecondCursor,
  DEFAULT_PAGE_SIZE,
  encodeMicrosecondCursor,
  toKeysetPage,
  type Page,
} from '#common/http/pagination.js';
import { EVENT_TYPES, type EventResponseDto } from './dto/event.dto.js';
import type { WebhookEventStatus, WebhookPayload } from './entities/webhook-event.entity.js';
import { UUID_PATTERN } from '#common/ids/uuid.js';

interface EventRow {
  id: string;
  payload: WebhookPayload;
  status: WebhookEventStatus;
  attempts: number;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
  /** created_at in microseconds since the epoch (text: a bigint), the cursor's position. */
  created_us: string;
}

const COLUMNS = `id, payload, status, attempts, last_attempt_at, delivered_at,
  (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us`;

/** The cursor: (created_at in microseconds, id) of the last event served; the outbox keeps microseconds. */
const encode = (row: EventRow) => encodeMicrosecondCursor(row.created_us, row.id);

/**
 * The events feed (docs/decisions/0029-events-feed.md): an application's outbox events, oldest first,
 * each as the payload its webhook signs plus its id and delivery state. Only the calling application's.
 */
@Injectable()
export class EventsFeedService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    /** The list tolerates a replica's lag (decision 0033); one event by id is read on the primary. */
    private readonly reads: ReadDatabase,
  ) {}

  async list(
    appId: string,
    query: { type?: string; cursor?: string; after?: string; limit?: number },
  ): Promise<Page<EventResponseDto>> {
    if (query.after !== undefined && query.cursor !== undefined && query.after !== query.cursor) {
      throw ValidationFailedError.single(
        'after',
        'invalid',
        'after and cursor name the same position; give one',
      );
    }
    const cursor = query.after ?? query.cursor;
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    // A named statement (decision 0048): the type a checked literal, the LIMIT a fixed size at least limit + 1
    // (toKeysetPage serves the first `limit` and tells from the next row that more exist).
    const params: unknown[] = [appId];
    let where = 'app_id = $1';
    if (query.type !== undefined) where += ` AND event = ${closedSetLiteral(query.type, EVENT_TYPES)}`;
    if (cursor !== undefined) {
      const after = decodeMicrosecondCursor(
        cursor,
        query.after !== undefined ? 'after' : 'cursor',
        UUID_PATTERN,
      );
      params.push(after.micros, after.id);
      where += ` AND (created_at, id) > ('epoch'::timestamptz + $2::bigint * interval '1 microsecond', $3::uuid)`;
    }
    const text = `SELECT ${COLUMNS} FROM webhook_events WHERE ${where} ORDER BY created_at, id LIMIT ${listFetchSize(limit + 1)}`;
    const rows = await this.reads.query<EventRow>(text, params, statementName('wallet_events_feed', text));
    return toKeysetPage(rows, limit, view, encode);
  }

  async get(appId: string, id: string): Promise<EventResponseDto> {
    const [row] = (await this.dataSource.query(
      `SELECT ${COLUMNS} FROM webhook_events WHERE id = $1 AND app_id = $2`,
      [id, appId],
    )) as EventRow[];
    if (!row) throw new NotFoundError(id);
    return view(row);
  }
}

function view(row: EventRow): EventResponseDto {
  return {
    id: row.id,
    event: row.payload.event,
    timestamp: row.payload.timestamp,
    data: row.payload.data,
    delivery: {
      state: row.status,
      attempts: row.attempts,
      lastAttemptAt: row.last_attempt_at?.toISOString() ?? null,
      deliveredAt: row.delivered_at?.toISOString() ?? null,
    },
  };
}
