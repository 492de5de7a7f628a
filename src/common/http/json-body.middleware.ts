import { StringDecoder } from 'node:string_decoder';
import { Inject, Injectable, NestMiddleware, Optional } from '@nestjs/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import iconv from 'iconv-lite';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { ValidationFailedError } from '../errors/domain-errors.js';
import { assertExactNumbers, childPath } from './exact-numbers.js';
import { isFormRequest, parseForm } from './form-body.js';
import { RouteCatalog } from './route-catalog.js';
import { requestPath } from './request-path.js';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The bytes and charset express.json read, handed over by its `verify` hook: the text its JSON.parse saw. */
const readByBodyParser = new WeakMap<object, { bytes: Buffer; charset: string }>();

/** Content types (lower-cased) whose charset is UTF-8 without asking content-type's parser. */
const PLAIN_JSON_TYPES = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
]);

/**
 * Parses JSON bodies inside Nest (so parse and size errors reach the one
 * exception filter): strict JSON objects only, BODY_LIMIT bytes at most, and a body of
 * any other content type is refused, except a multipart upload on a route that declares
 * @AcceptsFileUpload() (left to multer) and a urlencoded form on a route that declares
 * @AcceptsFormBody() (the same limit). A body where no route serves the method and path
 * is not read: routing answers 404.
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  private readonly parse: ReturnType<typeof express.json>;
  private readonly readRaw: ReturnType<typeof express.raw>;
  private readonly limit: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() @Inject(RouteCatalog) private readonly routes?: RouteCatalog,
  ) {
    this.limit = config.bodyLimitBytes;
    this.parse = express.json({
      limit: config.bodyLimitBytes,
      strict: true,
      type: () => true,
      verify: (request, _response, bytes, charset) => {
        readByBodyParser.set(request, { bytes, charset });
      },
    });
    this.readRaw = express.raw({ limit: config.bodyLimitBytes, type: () => true });
  }

  use(request: Request, response: Response, next: NextFunction): void | Promise<void> {
    const length = request.headers['content-length'];
    const hasBody =
      (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
    if (!METHODS_WITH_BODY.has(request.method) || !hasBody) return next();
    return this.parseBody(request, response, next);
  }

  private async parseBody(request: Request, response: Response, next: NextFunction): Promise<void> {
    // A body sent where no route serves it is left unread: routing answers 404 (decision 0004), whatever the body
    // (it answered 400 for a body that was not JSON; decision 0100).
    const path = requestPath(request);
    if (this.routes && !this.routes.serves(request.method, path)) return next();
    const type = (request.headers['content-type'] ?? '').toLowerCase();
    // Multipart goes to the upload routes' own reader; anywhere else it is refused as any body that is not JSON.
    if (
      type.startsWith('multipart/form-data') &&
      (!this.routes || this.routes.acceptsMultipart(request.method, path))
    )
      return next();
    if (!/^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/.test(type)) {
      if (isFormRequest(request) && this.routes?.acceptsForm(request.method, path)) {
        await this.parseFormBody(request, response, type);
        return next();
      }
      throw ValidationFailedError.single('', 'invalid', 'Content-Type must be application/json');
    }
    const length = this.plainLength(request, type);
    let text: string | undefined;
    if (length !== undefined) {
      // As body-parser: `body` exists (undefined) even when the body turns out unreadable or not JSON.
      const target: { body?: unknown } = request;
      if (!('body' in target)) target.body = undefined;
      text = await readUtf8(request, length);
      target.body = parseStrictJson(text);
    } else {
      await new Promise<void>((resolve, reject) =>
        this.parse(request, response, (error?: unknown) => (error ? reject(error) : resolve())),
      ).catch((error: unknown) => {
        // body-parser's own errors have a type the filter maps (too large, not JSON, an unsupported charset or
        // encoding); any other is the body's fault too (a gzip or deflate body that does not decompress: 400).
        if (typeof (error as { type?: unknown }).type === 'string') throw error;
        throw ValidationFailedError.single('', 'invalid', 'the request body could not be read');
      });
      const read = readByBodyParser.get(request);
      // The text body-parser parsed: its bytes decoded as it decodes them (an empty body has no verify call).
      if (read) text = iconv.decode(read.bytes, read.charset);
    }
    // `strict` lets arrays through; every request body of the interface is an object.
    if (Array.isArray(request.body)) {
      throw ValidationFailedError.single('', 'invalid', 'Request body must be a JSON object');
    }
    assertStorableJson(request.body);
    // Numbers JSON.parse rounded (decision 0099): after the checks above, so their errors come first as before.
    if (text !== undefined) assertExactNumbers(text);
    next();
  }

  /**
   * A urlencoded form, read as express.raw reads any body (limit, content encodings), then parsed. Forms are
   * OAuth 2.0 token requests, whose answers carry `Pragma: no-cache` beside the API's `Cache-Control: no-store`
   * (RFC 6749 §5.1; the exception filter sets it on the errors that come before this).
   */
  private async parseFormBody(request: Request, response: Response, type: string): Promise<void> {
    response.setHeader('Pragma', 'no-cache');
    try {
      await new Promise<void>((resolve, reject) =>
        this.readRaw(request, response, (error?: unknown) => (error ? reject(error) : resolve())),
      );
    } catch (error) {
      if ((error as { type?: unknown }).type === 'entity.too.large') throw error;
      throw ValidationFailedError.single('', 'invalid', 'the request body could not be read');
    }
    const raw: unknown = request.body;
    request.body = parseForm(Buffer.isBuffer(raw) ? raw : Buffer.alloc(0), type);
  }

  /**
   * The declared length of a body that express.json would read as plain UTF-8 from the request itself (no
   * content encoding, no chunked framing, within the limit, a JSON content type with no charset or UTF-8, a
   * fresh request stream), which readUtf8 and parseStrictJson then read exactly as it would; undefined for
   * everything else, which goes to express.json.
   */
  private plainLength(request: Request, type: string): number | undefined {
    const { headers } = request;
    if (!PLAIN_JSON_TYPES.has(type)) return undefined;
    if (headers['content-encoding'] !== undefined || headers['transfer-encoding'] !== undefined)
      return undefined;
    const declared = headers['content-length'];
    if (declared === undefined || !/^\d{1,9}$/.test(declared)) return undefined;
    const length = Number(declared);
    if (length > this.limit) return undefined;
    // body-parser skips a finished request and raw-body refuses a stream that is not readable or decodes itself.
    if (!request.readable || request.readableEncoding !== null) return undefined;
    if ((request as { upgrade?: boolean }).upgrade || !request.socket?.readable) return undefined;
    return length;
  }
}

/**
 * The request body as a string, as raw-body reads it for body-parser: Node's UTF-8 StringDecoder over the chunks,
 * a leading byte order mark dropped (iconv-lite's StripBOM). Node's parser delivers exactly Content-Length bytes
 * unless the client goes away (the request then emits `error`, or at least `close`, before `end`), which rejects
 * with the error raw-body gives (`request.aborted`).
 */
function readUtf8(request: Request, length: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const decoder = new StringDecoder('utf8');
    let text = '';
    let received = 0;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      text += decoder.write(chunk);
    };
    const onEnd = () => {
      cleanup();
      if (received !== length)
        return reject(
          readError('request size did not match content length', 'request.size.invalid', length, received),
        );
      text += decoder.end();
      resolve(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    };
    const onAbort = () => {
      cleanup();
      request.unpipe();
      request.pause();
      reject(readError('request aborted', 'request.aborted', length, received, 'ECONNABORTED'));
    };
    const cleanup = () => {
      request.removeListener('data', onData);
      request.removeListener('end', onEnd);
      request.removeListener('error', onAbort);
      request.removeListener('close', onAbort);
    };
    request.on('close', onAbort);
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onAbort);
  });
}

/** The http-errors BadRequestError that raw-body and body-parser give for a body that could not be read. */
class BadRequestError extends Error {
  readonly status = 400;
  readonly statusCode = 400;
  readonly expose = true;

  constructor(
    message: string,
    readonly type: string,
    readonly expected: number,
    readonly length: number,
    readonly received: number,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'BadRequestError';
  }
}

function readError(message: string, type: string, length: number, received: number, code?: string): Error {
  return new BadRequestError(message, type, length, length, received, code);
}

/** The first character that is not JSON whitespace (RFC 8259), as body-parser finds it. */
const FIRST_NON_WHITESPACE = /^[ \t\n\r]*([^ \t\n\r]|$)/;

/**
 * body-parser's strict JSON parse: an empty body is `{}`, anything but an object or array is refused, and a
 * failure is the SyntaxError marked `entity.parse.failed` (the exception filter's "not valid JSON").
 */
export function parseStrictJson(text: string): unknown {
  if (text.length === 0) return {};
  try {
    if (text[0] !== '{' && text[0] !== '[') {
      const first = FIRST_NON_WHITESPACE.exec(text)?.[1] || undefined;
      if (first !== '{' && first !== '[')
        throw new SyntaxError(`Unexpected token '${first}', "${text.slice(0, 10)}" is not valid JSON`);
    }
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw Object.assign(error as SyntaxError, {
      status: 400,
      statusCode: 400,
      expose: true,
      body: text,
      type: 'entity.parse.failed',
    });
  }
}

/** Deeper bodies are refused: no request of the interface nests more than a few levels. */
export const MAX_JSON_DEPTH = 32;

/**
 * An object with more properties is refused before validation: no object of the interface comes near it (a free-form
 * KYC section included), and each unknown property would otherwise cost a validation item (decision 0073). The
 * query parser keeps at most 1,000 keys, so a query string never reaches it.
 */
export const MAX_JSON_PROPERTIES = 1000;

/** A UTF-16 surrogate without its pair: not Unicode, and validator.js's encodeURI throws on it. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Keys that reach prototypes through class-transformer and slip past the whitelist, and the names of
 * Object.prototype's members (toString, hasOwnProperty, …), which class-transformer drops without a word: no
 * property of the interface has one of these names, so each is refused as an unknown property would be.
 */
const PROTOTYPE_KEYS = new Set([
  '__proto__',
  'constructor',
  'prototype',
  ...Object.getOwnPropertyNames(Object.prototype),
]);

/** One value still to check: the key it has in its parent (undefined for the body itself), for an error's path. */
type Frame = { value: unknown; depth: number; parent?: Frame; key?: string; inArray?: boolean };

/**
 * How many error paths the walk has built, for tests: a path is built only for the error that names it, never
 * for each key of a body that passes (a 100 KB array would build 50,000 strings before authentication).
 */
export const storableJsonPaths = { built: 0 };

/** The path of `key` under `parent`, as the validation items write it: `a.b[0].c`. */
function jsonPathOf(parent: Frame, key: string, inArray: boolean): string {
  storableJsonPaths.built += 1;
  const chain: Frame[] = [];
  for (
    let frame: Frame | undefined = { value: undefined, depth: 0, parent, key, inArray };
    frame;
    frame = frame.parent
  )
    chain.push(frame);
  let path = '';
  for (const frame of chain.reverse()) {
    if (frame.key === undefined) continue;
    // childPath: the same form as the exact-number check and the validation pipe (a key of digits as `a[0]`).
    path = frame.inArray ? `${path}[${frame.key}]` : childPath(path, frame.key);
  }
  return path;
}

/**
 * Refuses what PostgreSQL cannot store or what would exhaust the stack later:
 * a NUL character or a lone surrogate in any string or key, nesting deeper
 * than MAX_JSON_DEPTH, an object with more than MAX_JSON_PROPERTIES properties, and prototype keys (refused at their path, as the
 * whitelist refuses any unknown property). Walks iteratively, so the check
 * itself cannot overflow. Numbers, booleans and null are never pushed, and the
 * path is built only for the error that names it (decision 0073).
 */
export function assertStorableJson(body: unknown): void {
  const stack: Frame[] = [{ value: body, depth: 0 }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { value, depth } = frame;
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
    const entries = Object.entries(value);
    if (!array && entries.length > MAX_JSON_PROPERTIES) {
      const path =
        frame.parent && frame.key !== undefined ? jsonPathOf(frame.parent, frame.key, !!frame.inArray) : '';
      throw ValidationFailedError.single(
        path,
        'invalid',
        `an object may have at most ${MAX_JSON_PROPERTIES} properties`,
      );
    }
    for (const [key, child] of entries) {
      if (key.includes('\u0000'))
        throw ValidationFailedError.single('', 'invalid', 'keys must not contain NUL characters');
      if (LONE_SURROGATE.test(key))
        throw ValidationFailedError.single('', 'invalid', 'keys must be well-formed Unicode');
      if (!array && PROTOTYPE_KEYS.has(key))
        throw ValidationFailedError.single(
          jsonPathOf(frame, key, array),
          'invalid',
          `property ${key} is not allowed`,
        );
      // Only strings and objects have anything to check; the order of what is pushed (and so of the first error) is
      // what it was when every value was pushed.
      if (typeof child === 'string' || (typeof child === 'object' && child !== null))
        stack.push({ value: child, depth: depth + 1, parent: frame, key, inArray: array });
    }
  }
}
