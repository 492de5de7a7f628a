import {
  applyDecorators,
  CallHandler,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  UseInterceptors,
} from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { MaxLength } from './validators.js';
import type { Response } from 'express';
import { map, type Observable } from 'rxjs';
import { ValidationFailedError } from '../errors/domain-errors.js';
import { UUID_PATTERN } from '../ids/uuid.js';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
export const NEXT_CURSOR_HEADER = 'X-Next-Cursor';

/** `?limit=&cursor=` of every list route. */
export class PageQueryDto {
  @IsOptional()
  // Plain decimal digits only: `1e2`, `0x10` or ` 3` are not page sizes.
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,4}$/.test(value) ? Number(value) : value,
  )
  @Max(MAX_PAGE_SIZE)
  @Min(1)
  @IsInt()
  limit?: number;

  @IsOptional()
  @MaxLength(200)
  @IsString()
  cursor?: string;
}

/** A page: the items, and the cursor of the next page when there is one. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Keyset position: (createdAt, id) of the last item served. */
export interface CursorPosition {
  createdAt: Date;
  id: string;
}

export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(`${position.createdAt.toISOString()}|${position.id}`).toString('base64url');
}

/**
 * The position of a cursor encodeCursor wrote, or a 400 at `cursor`: exactly its form (an ISO instant as
 * toISOString writes it, years 0001-9999, and a uuid), so nothing PostgreSQL would refuse gets through.
 */
export function decodeCursor(cursor: string | undefined): CursorPosition | undefined {
  if (cursor === undefined) return undefined;
  const [time, id, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(time);
  const valid =
    extra === undefined &&
    UUID_PATTERN.test(id ?? '') &&
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(time ?? '') &&
    !Number.isNaN(createdAt.getTime()) &&
    createdAt.toISOString() === time &&
    createdAt.getUTCFullYear() >= 1;
  if (!valid) throw ValidationFailedError.single('cursor', 'invalid', 'cursor is not valid');
  return { createdAt, id };
}

/** Keyset position at microsecond precision: the time in µs since the epoch (decimal text) and the row's id. */
export interface MicrosecondPosition {
  micros: string;
  id: string;
}

/** The cursor of the events feed and the audit trail: the last row's (time in µs, id), opaque to clients. */
export function encodeMicrosecondCursor(micros: string, id: string): string {
  return Buffer.from(`${micros}|${id}`).toString('base64url');
}

/** A cursor of encodeMicrosecondCursor whose id matches `idPattern`, or a 400 at `param`. */
export function decodeMicrosecondCursor(
  cursor: string,
  param: string,
  idPattern: RegExp,
): MicrosecondPosition {
  const [micros, id, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (extra !== undefined || !/^\d{1,17}$/.test(micros ?? '') || !idPattern.test(id ?? '')) {
    throw ValidationFailedError.single(param, 'invalid', `${param} is not valid`);
  }
  return { micros, id };
}

/**
 * Builds a page from rows fetched with `limit + 1` (the extra row only says that more exist); the next cursor is
 * `cursorOf` the last row served.
 */
export function toKeysetPage<R, T>(
  rows: R[],
  limit: number,
  view: (row: R) => T,
  cursorOf: (row: R) => string,
): Page<T> {
  const more = rows.length > limit;
  const served = more ? rows.slice(0, limit) : rows;
  const last = served[served.length - 1];
  return { items: served.map(view), nextCursor: more && last !== undefined ? cursorOf(last) : null };
}

/** `toKeysetPage` for rows ordered by (createdAt, id) with the common cursor. */
export function toPage<R extends { createdAt: Date; id: string }, T>(
  rows: R[],
  limit: number,
  view: (row: R) => T,
): Page<T> {
  return toKeysetPage(rows, limit, view, encodeCursor);
}

/** Answers the plain array the interface shows, with the next page's cursor in a header. */
@Injectable()
export class PageInterceptor<T> implements NestInterceptor<Page<T>, T[]> {
  intercept(context: ExecutionContext, next: CallHandler<Page<T>>): Observable<T[]> {
    const response = context.switchToHttp().getResponse<Response>();
    return next.handle().pipe(
      map((page) => {
        if (page.nextCursor) response.setHeader(NEXT_CURSOR_HEADER, page.nextCursor);
        return page.items;
      }),
    );
  }
}

/** `limit` of a list: an integer 1-MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE when absent. */
export const PAGE_LIMIT_SCHEMA = {
  type: 'integer',
  minimum: 1,
  maximum: MAX_PAGE_SIZE,
  default: DEFAULT_PAGE_SIZE,
} as const;

/** A cursor as the service wrote it (opaque; at most 200 characters). */
export const CURSOR_SCHEMA = { type: 'string', maxLength: 200 } as const;

/** A list route: plain array body, `limit`/`cursor` query, `X-Next-Cursor` header. */
export const Paginated = () =>
  applyDecorators(
    UseInterceptors(PageInterceptor),
    ApiQuery({
      name: 'limit',
      required: false,
      description: `page size, 1-${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
      schema: PAGE_LIMIT_SCHEMA,
    }),
    ApiQuery({
      name: 'cursor',
      required: false,
      description: `the ${NEXT_CURSOR_HEADER} response header of the previous page (absent on the last page)`,
      schema: CURSOR_SCHEMA,
    }),
  );
