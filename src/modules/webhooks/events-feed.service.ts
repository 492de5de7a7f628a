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
  type MicrosecondPosition,
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

/** What a page reads of each event; COLUMNS what it answers, from these. */
const STORED = 'id, payload, status, attempts, last_attempt_at, delivered_at, created_at';
const COLUMNS = `id, payload, status, attempts, last_attempt_at, delivered_at,
  (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us`;

/**
 * EventsFeedService.list's query: an application's events, of one type or of all, oldest first by (created_at, id),
 * after a position. A named statement (decision 0048): the types checked literals, the LIMIT a fixed size at least
 * `rows` (the page may hold more rows than asked for, the first ones are the same). The index is (app_id, event,
 * created_at, id) (decision 0064): each type is one range of it, read in the feed's order and merged with the
 * other types' ranges, so a page reads about its own rows whatever the type's share of the events.
 */
export function eventsFeedQuery(
  appId: string,
  type: string | undefined,
  rows: number,
  after?: MicrosecondPosition,
): { text: string; values: unknown[] } {
  const values: unknown[] = [appId];
  let position = '';
  if (after !== undefined) {
    values.push(after.micros, after.id);
    position = ` AND (created_at, id) > ('epoch'::timestamptz + $2::bigint * interval '1 microsecond', $3::uuid)`;
  }
  const size = listFetchSize(rows);
  const ranges = (type !== undefined ? [type] : EVENT_TYPES).map(
    (name) => `(SELECT ${STORED} FROM webhook_events
        WHERE app_id = $1 AND event = ${closedSetLiteral(name, EVENT_TYPES)}${position}
        ORDER BY created_at, id LIMIT ${size})`,
  );
  return {
    text: `SELECT ${COLUMNS} FROM (${ranges.join(' UNION ALL ')}) e ORDER BY created_at, id LIMIT ${size}`,
    values,
  };
}

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
    const position =
      cursor === undefined
        ? undefined
        : decodeMicrosecondCursor(cursor, query.after !== undefined ? 'after' : 'cursor', UUID_PATTERN);
    const { text, values } = eventsFeedQuery(appId, query.type, limit + 1, position);
    const rows = await this.reads.query<EventRow>(text, values, statementName('wallet_events_feed', text));
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
