import { Inject, Injectable, NestMiddleware } from '@nestjs/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { ValidationFailedError } from '../errors/domain-errors.js';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Parses JSON bodies inside Nest (so parse and size errors reach the one
 * exception filter): strict JSON objects only, BODY_LIMIT bytes at most, and a body of
 * any other content type is refused (multipart is left to upload routes).
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  private readonly parse: ReturnType<typeof express.json>;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.parse = express.json({ limit: config.bodyLimitBytes, strict: true, type: () => true });
  }

  use(request: Request, response: Response, next: NextFunction): void | Promise<void> {
    const length = request.headers['content-length'];
    const hasBody =
      (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
    if (!METHODS_WITH_BODY.has(request.method) || !hasBody) return next();
    return this.parseBody(request, response, next);
  }

  private async parseBody(request: Request, response: Response, next: NextFunction): Promise<void> {
    const type = (request.headers['content-type'] ?? '').toLowerCase();
    if (type.startsWith('multipart/form-data')) return next();
    if (!/^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/.test(type)) {
      throw ValidationFailedError.single('', 'invalid', 'Content-Type must be application/json');
    }
    await new Promise<void>((resolve, reject) =>
      this.parse(request, response, (error?: unknown) => (error ? reject(error) : resolve())),
    );
    // `strict` lets arrays through; every request body of the interface is an object.
    if (Array.isArray(request.body)) {
      throw ValidationFailedError.single('', 'invalid', 'Request body must be a JSON object');
    }
    assertStorableJson(request.body);
    next();
  }
}

/** Deeper bodies are refused: no request of the interface nests more than a few levels. */
export const MAX_JSON_DEPTH = 32;

/** A UTF-16 surrogate without its pair: not Unicode, and validator.js's encodeURI throws on it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Keys that reach prototypes through class-transformer and slip past the whitelist. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Refuses what PostgreSQL cannot store or what would exhaust the stack later:
 * a NUL character or a lone surrogate in any string or key, nesting deeper
 * than MAX_JSON_DEPTH, and prototype keys (refused at their path, as the
 * whitelist refuses any unknown property). Walks iteratively, so the check
 * itself cannot overflow.
 */
export function assertStorableJson(body: unknown): void {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value: body, depth: 0, path: '' }];
  while (stack.length > 0) {
    const { value, depth, path } = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000'))
        throw ValidationFailedError.single('', 'invalid', 'strings must not contain NUL characters');
      if (LONE_SURROGATE.test(value))
        throw ValidationFailedError.single('', 'invalid', 'strings must be well-formed Unicode');
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw ValidationFailedError.single('', 'invalid', `JSON nesting deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const array = Array.isArray(value);
    for (const [key, child] of Object.entries(value)) {
      if (key.includes('\u0000'))
        throw ValidationFailedError.single('', 'invalid', 'keys must not contain NUL characters');
      if (LONE_SURROGATE.test(key))
        throw ValidationFailedError.single('', 'invalid', 'keys must be well-formed Unicode');
      const childPath = array ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      if (!array && PROTOTYPE_KEYS.has(key))
        throw ValidationFailedError.single(childPath, 'invalid', `property ${key} is not allowed`);
      stack.push({ value: child, depth: depth + 1, path: childPath });
    }
  }
}
