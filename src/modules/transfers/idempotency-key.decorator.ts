import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

/**
 * The request's `Idempotency-Key` header, or undefined. Not `@Headers('idempotency-key')`: @nestjs/swagger
 * documents that as a second, required header parameter beside the optional one the routes declare
 * (`@ApiHeader`), and a generated client would then always send one.
 */
export const IdempotencyKey = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  const value = context.switchToHttp().getRequest<Request>().headers['idempotency-key'];
  return Array.isArray(value) ? value.join(', ') : value;
});
