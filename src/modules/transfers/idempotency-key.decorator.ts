import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import type { Request } from 'express';
import { IDEMPOTENCY_KEY } from './transfers.service.js';

/**
 * The request's `Idempotency-Key` header, or undefined. Not `@Headers('idempotency-key')`: @nestjs/swagger
 * documents that as a second, required header parameter beside the optional one the routes declare
 * (`@ApiHeader`), and a generated client would then always send one.
 */
export const IdempotencyKey = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  const value = context.switchToHttp().getRequest<Request>().headers['idempotency-key'];
  return Array.isArray(value) ? value.join(', ') : value;
});

/** The optional `Idempotency-Key` header of the money POSTs, as the service checks it (IDEMPOTENCY_KEY). */
export const IdempotencyKeyHeader = () =>
  ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'retries with the same key and body get the first answer; kept at least 24 h',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY.source },
  });
