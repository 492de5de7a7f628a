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

  async use(request: Request, response: Response, next: NextFunction): Promise<void> {
    const length = request.headers['content-length'];
    const hasBody =
      (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
    if (!METHODS_WITH_BODY.has(request.method) || !hasBody) return next();
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
    next();
  }
}
