import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { map, type Observable } from 'rxjs';
import { NEXT_CURSOR_HEADER } from '#common/http/pagination.js';
import type { Money } from '../money.js';
import type { StatementResponseDto } from './dto/statement.dto.js';
import type { ExactStatement, StatementPage } from './statement.service.js';

export const CSV_HEADER = [
  'row',
  'posted_at',
  'amount',
  'balance',
  'posting_id',
  'entry_id',
  'kind',
  'reference',
  'description',
];

/** RFC 4180: a field with a comma, a quote or a line break goes in quotes, its quotes doubled. */
const field = (value: string | null): string =>
  value === null ? '' : /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;

const exact = (value: Money): string => value.toFixed();

/**
 * Free text (a movement's kind, reference and description, which a reversal's `reason` written by another user
 * reaches) that a spreadsheet would read as a formula (`=`, `+`, `-`, `@`, a tab or a carriage return first) gets a
 * leading `'`, OWASP's remedy for CSV injection: the cell shows the text instead of running it.
 */
const text = (value: string | null): string | null =>
  value !== null && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;

/**
 * The statement as CSV (RFC 4180, CRLF, a header row; amounts exact with a decimal point; UTC times): an OPENING
 * row (balance at `from`), one MOVEMENT row per movement of the page, a CLOSING row (balance at `to`), and the
 * period's TOTAL_IN and TOTAL_OUT (in the amount column).
 */
export function statementCsv(statement: ExactStatement): string {
  const rows: (string | null)[][] = [
    CSV_HEADER,
    ['OPENING', statement.from, null, exact(statement.opening), null, null, null, null, null],
    ...statement.movements.map((m) => [
      'MOVEMENT',
      m.posted_at,
      exact(m.amount),
      exact(m.running),
      m.posting_id,
      m.entry_id,
      text(m.kind),
      text(m.reference),
      text(m.description),
    ]),
    ['CLOSING', statement.to, null, exact(statement.closing), null, null, null, null, null],
    ['TOTAL_IN', statement.to, exact(statement.totalIn), null, null, null, null, null, null],
    ['TOTAL_OUT', statement.to, exact(statement.totalOut), null, null, null, null, null, null],
  ];
  return rows.map((row) => row.map(field).join(',')).join('\r\n') + '\r\n';
}

/** Does the request ask for CSV? (`Accept` naming text/csv; anything else gets JSON.) */
const wantsCsv = (request: Request): boolean => /\btext\/csv\b/i.test(request.headers.accept ?? '');

/** Answers a statement page: JSON (or CSV on `Accept: text/csv`), the next page's cursor in X-Next-Cursor. */
@Injectable()
export class StatementInterceptor implements NestInterceptor<StatementPage, StatementResponseDto | string> {
  intercept(
    context: ExecutionContext,
    next: CallHandler<StatementPage>,
  ): Observable<StatementResponseDto | string> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    return next.handle().pipe(
      map((page) => {
        if (page.nextCursor) response.setHeader(NEXT_CURSOR_HEADER, page.nextCursor);
        if (!wantsCsv(request)) return page.body;
        response.setHeader('Content-Type', 'text/csv; charset=utf-8');
        return statementCsv(page.exact);
      }),
    );
  }
}
