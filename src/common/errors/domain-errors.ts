/**
 * Domain exceptions: what services throw. They carry meaning, never HTTP
 * details; the one exception filter (api-exception.filter.ts) turns each into
 * the interface's error body. The worker and the CLI can catch them too.
 */

export type ValidationItemType = 'required' | 'invalid' | 'notfound' | 'duplicate';

export interface ValidationItem {
  /** Body path such as `legalAddress.zipCode`; empty for the body as a whole. */
  path: string;
  message: string;
  type: ValidationItemType;
}

export type ForbiddenReason = 'FORBIDDEN' | 'INSUFFICIENT_PERMISSIONS' | 'INVALID_STATE';

export abstract class DomainError extends Error {}

/** 400 with the validation error body. */
/**
 * A 400 answers at most this many validation items, the first ones found: the interface's `items` lists what is
 * wrong, and a body with thousands of unknown properties answered an item for each (812 KB; decision 0073).
 */
export const MAX_VALIDATION_ITEMS = 20;

export class ValidationFailedError extends DomainError {
  constructor(
    readonly items: ValidationItem[],
    message = 'Invalid request payload',
  ) {
    super(message);
    this.name = 'ValidationError';
  }

  static single(path: string, type: ValidationItemType, message: string): ValidationFailedError {
    return new ValidationFailedError([{ path, message, type }]);
  }
}

/** 404 with the not found body; `item` names what was not found. */
export class NotFoundError extends DomainError {
  constructor(
    readonly item: string,
    message = 'Resource not found',
  ) {
    super(message);
    this.name = 'NotFoundError';
  }
}

/** 401 with the unauthorized body. */
export class UnauthorizedError extends DomainError {
  constructor(message = 'Missing or invalid credentials') {
    super(message);
    this.name = 'UnauthorizedError';
  }
}

/** 403 with the forbidden body. */
export class ForbiddenError extends DomainError {
  constructor(
    readonly reason: ForbiddenReason,
    message = 'The operation is not allowed',
  ) {
    super(message);
    this.name = 'ForbiddenError';
  }
}

/** 429 */
export class TooManyRequestsError extends DomainError {
  constructor(
    message = 'Too many requests',
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'TooManyRequestsError';
  }
}

export type OAuthErrorId =
  'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_grant' | 'invalid_scope';

/**
 * Errors of the token routes, which have their own body: `{errorId, code, message}` plus `detail[]` on 400
 * for a JSON request, RFC 6749's `{error, error_description}` for a form.
 */
export class TokenRequestError extends DomainError {
  constructor(
    readonly status: 400 | 401,
    readonly errorId: OAuthErrorId,
    message: string,
    readonly detail: ValidationItem[] = [],
  ) {
    super(message);
    this.name = 'TokenRequestError';
  }
}

/** 503: a dependency (database, queue backend, a provider) is not available; Retry-After when it is set. */
export class ServiceUnavailableError extends DomainError {
  constructor(
    message: string,
    readonly detail: Record<string, unknown> = {},
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ServiceUnavailableError';
  }
}
