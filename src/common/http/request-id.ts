import { createParamDecorator, type ExecutionContext } from '@nestjs/common';

/** This request's id (X-Request-Id, set by the observability middleware), or null outside it. */
export const CurrentRequestId = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): string | null =>
    ctx.switchToHttp().getRequest<{ id?: string }>().id ?? null,
);
