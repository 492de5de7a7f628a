import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Inject,
  Optional,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { PinoLogger } from '../logging/pino-logger.js';
import { isFormRequest } from '../http/form-body.js';
import { RouteCatalog } from '../http/route-catalog.js';
import {
  DomainError,
  ForbiddenError,
  NotFoundError,
  ServiceUnavailableError,
  TokenRequestError,
  TooManyRequestsError,
  UnauthorizedError,
  MAX_VALIDATION_ITEMS,
  ValidationFailedError,
  type ValidationItem,
} from './domain-errors.js';
import { isDependencyUnavailable } from './dependency-unavailable.js';
import { requestPath } from '../http/request-path.js';
import type { ErrorStyle } from './error-style.js';

/** The one place that writes error bodies (interface v1, part "Errors"). */
interface Problem {
  status: number;
  name: string;
  message: string;
  detail?: Record<string, unknown>;
  items?: ValidationItem[];
  oauthErrorId?: string;
  retryAfterSeconds?: number;
  /** Logged at warn with the error and the trackingId (a 500 is logged at error). */
  warning?: string;
}

interface BodyParserError {
  type?: string;
  status?: number;
  statusCode?: number;
  message?: string;
}

export const ERROR_STYLE_REQUEST_KEY = 'errorStyle';

type StyledRequest = Request & { id?: string | number; [ERROR_STYLE_REQUEST_KEY]?: ErrorStyle };

@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  constructor(
    @Inject(PinoLogger) private readonly logger: PinoLogger,
    @Optional() @Inject(RouteCatalog) private readonly routes?: RouteCatalog,
  ) {
    this.logger.setContext('ApiExceptionFilter');
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const request = ctx.getRequest<StyledRequest>();
    const response = ctx.getResponse<Response>();
    if (response.headersSent) return;
    const trackingId = String(request.id ?? '');
    const problem = this.toProblem(exception, request, trackingId);
    if (problem.status === 500) {
      this.logger.error({ err: exception, trackingId }, 'unhandled error');
    } else if (problem.warning) {
      this.logger.warn({ err: exception, trackingId }, problem.warning);
    }
    const style =
      request[ERROR_STYLE_REQUEST_KEY] ??
      this.routes?.errorStyleFor(request.method, requestPath(request)) ??
      'json';
    if (problem.retryAfterSeconds !== undefined)
      response.setHeader('Retry-After', String(problem.retryAfterSeconds));
    if (style === 'text' && problem.status < 500) {
      response
        .status(problem.status === 401 ? 401 : 400)
        .type('text/html')
        .send('NO ROUTES');
      return;
    }
    if (style === 'oauth' && problem.status < 500 && isFormRequest(request)) {
      // A standard OAuth 2.0 client's form: RFC 6749 §5.2's body, and never cached (§5.1).
      response.setHeader('Pragma', 'no-cache');
      response.status(problem.status).json({
        error: problem.oauthErrorId ?? oauthErrorIdFor(problem.status),
        error_description: errorDescription(problem),
      });
      return;
    }
    if (style === 'oauth' && problem.status < 500) {
      response.status(problem.status).json({
        errorId: problem.oauthErrorId ?? oauthErrorIdFor(problem.status),
        code: problem.status,
        message: problem.message,
        ...(problem.status === 400 ? { detail: problem.items ?? [] } : {}),
      });
      return;
    }
    response.status(problem.status).json({
      name: problem.name,
      message: problem.message,
      ...(problem.items ? { detail: { items: problem.items } } : {}),
      ...(problem.detail ? { detail: problem.detail } : {}),
    });
  }

  private toProblem(exception: unknown, request: Request, trackingId: string): Problem {
    if (exception instanceof DomainError) {
      const problem = this.fromDomain(exception);
      if (problem) return problem;
    }
    const parserError = exception as BodyParserError;
    if (parserError && typeof parserError === 'object' && typeof parserError.type === 'string') {
      if (parserError.type === 'entity.too.large') {
        return { status: 413, name: 'PayloadTooLargeError', message: 'Request body is too large' };
      }
      if (parserError.type.startsWith('entity.') || parserError.type.endsWith('.unsupported')) {
        return validation([{ path: '', message: 'Request body is not valid JSON', type: 'invalid' }]);
      }
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      if (status === HttpStatus.NOT_FOUND) {
        return {
          status,
          name: 'NotFoundError',
          message: 'Resource not found',
          // requestPath, not request.path: under the global prefix's not-found router, path lacks the prefix.
          detail: { item: requestPath(request) },
        };
      }
      if (status === HttpStatus.TOO_MANY_REQUESTS) {
        return { status, name: 'TooManyRequestsError', message: 'Too many requests', retryAfterSeconds: 60 };
      }
      if (status === HttpStatus.PAYLOAD_TOO_LARGE) {
        return { status, name: 'PayloadTooLargeError', message: 'Request body is too large' };
      }
      if (status === HttpStatus.UNAUTHORIZED) {
        return { status, name: 'UnauthorizedError', message: 'Missing or invalid credentials' };
      }
      if (status === HttpStatus.BAD_REQUEST) {
        return validation([{ path: '', message: exception.message, type: 'invalid' }]);
      }
      if (status < 500) return { status, name: exception.name, message: exception.message };
    }
    if (isDependencyUnavailable(exception)) {
      // Not a fault of the request: 503 says so, and when to try again (an Idempotency-Key makes a transfer's
      // retry safe whether or not this attempt got through).
      return {
        status: 503,
        name: 'ServiceUnavailableError',
        message: 'A service this request needs is not available; try again shortly',
        detail: { trackingId },
        retryAfterSeconds: 1,
        warning: 'dependency unavailable',
      };
    }
    return {
      status: 500,
      name: 'InternalServerError',
      message: 'Internal server error',
      detail: { trackingId },
    };
  }

  private fromDomain(error: DomainError): Problem | undefined {
    if (error instanceof ValidationFailedError) return validation(error.items, error.message);
    if (error instanceof NotFoundError) {
      return { status: 404, name: error.name, message: error.message, detail: { item: error.item } };
    }
    if (error instanceof UnauthorizedError) return { status: 401, name: error.name, message: error.message };
    if (error instanceof ForbiddenError) {
      return { status: 403, name: error.name, message: error.message, detail: { reason: error.reason } };
    }
    if (error instanceof ServiceUnavailableError) {
      return {
        status: 503,
        name: error.name,
        message: error.message,
        detail: error.detail,
        retryAfterSeconds: error.retryAfterSeconds,
      };
    }
    if (error instanceof TooManyRequestsError) {
      return {
        status: 429,
        name: error.name,
        message: error.message,
        retryAfterSeconds: error.retryAfterSeconds,
      };
    }
    if (error instanceof TokenRequestError) {
      return {
        status: error.status,
        name: error.name,
        message: error.message,
        items: error.status === 400 ? error.detail : undefined,
        oauthErrorId: error.errorId,
      };
    }
    return undefined;
  }
}

function validation(items: ValidationItem[], message = 'Invalid request payload'): Problem {
  return { status: 400, name: 'ValidationError', message, items: items.slice(0, MAX_VALIDATION_ITEMS) };
}

/**
 * RFC 6749 §5.2's error_description: what was wrong (the validation items' messages, else the message), in the
 * characters it allows (printable ASCII without `"` and `\`).
 */
function errorDescription(problem: Problem): string {
  const text = problem.items?.length ? problem.items.map((item) => item.message).join('; ') : problem.message;
  return text
    .replace(/"/g, "'")
    .replace(/\\/g, '/')
    .replace(/[^\x20-\x7e]/g, '?');
}

function oauthErrorIdFor(status: number): string {
  if (status === 401) return 'invalid_client';
  if (status === 429) return 'rate_limited';
  return 'invalid_request';
}
