import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import type { Request } from 'express';
import { ValidationFailedError } from '#common/errors/domain-errors.js';

/** An Idempotency-Key: 1-255 visible ASCII characters (no space: the key namespaces in idempotency_keys rely on it). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** Refuses a malformed Idempotency-Key (a 400 of the request, before anything is written); none is fine. */
export function checkIdempotencyKey(key: string | undefined): void {
  if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
    throw ValidationFailedError.single(
      'Idempotency-Key',
      'invalid',
      'Idempotency-Key must be 1-255 visible ASCII characters',
    );
  }
}

/**
 * The request's `Idempotency-Key` header, or undefined. Not `@Headers('idempotency-key')`: @nestjs/swagger
 * documents that as a second, required header parameter beside the optional one the routes declare
 * (`@ApiHeader`), and a generated client would then always send one.
 */
export const IdempotencyKey = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  const value = context.switchToHttp().getRequest<Request>().headers['idempotency-key'];
  return Array.isArray(value) ? value.join(', ') : value;
});

/** The optional `Idempotency-Key` header of the money POSTs and of POST /mobile/sms, as the services check it (IDEMPOTENCY_KEY). */
export const IdempotencyKeyHeader = () =>
  ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'retries with the same key and body get the first answer; kept at least 24 h',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY.source },
  });
