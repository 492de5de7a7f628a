import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import type { NextFunction, Request, Response } from 'express';
import type { AppConfig } from '#config/app-config.js';
import { ValidationFailedError } from '../errors/domain-errors.js';
import { assertExactNumbers } from './exact-numbers.js';
import {
  assertStorableJson,
  JsonBodyMiddleware,
  MAX_JSON_DEPTH,
  storableJsonPaths,
} from './json-body.middleware.js';

/** The middleware with its plain-JSON reader switched off: every body goes through express.json. */
class BodyParserOnly extends JsonBodyMiddleware {
  constructor(config: AppConfig) {
    super(config);
    (this as unknown as { plainLength: () => undefined }).plainLength = () => undefined;
  }
}

const config = { bodyLimitBytes: 1024 } as AppConfig;

/** What a request left: the body (as JSON text, so key order counts), or the error, and whether `body` exists. */
async function outcome(middleware: JsonBodyMiddleware, request: IncomingMessage): Promise<string> {
  try {
    let nextCalled = false;
    await middleware.use(request as Request, {} as Response, (() => (nextCalled = true)) as NextFunction);
    const body = (request as { body?: unknown }).body;
    return `next=${nextCalled} has=${'body' in request} body=${JSON.stringify(body)}`;
  } catch (error) {
    if (error instanceof ValidationFailedError) return `validation ${JSON.stringify(error.items)}`;
    const { type, status, statusCode, expose, name } = error as Record<string, unknown>;
    return `error ${String(name)} ${String(type)} ${String(status)} ${String(statusCode)} ${String(expose)} has=${'body' in request}`;
  }
}

describe('JsonBodyMiddleware: the plain UTF-8 JSON reader gives what express.json gives', () => {
  let server: Server;
  let port: number;
  let current: JsonBodyMiddleware;
  let result: Promise<string>;
  let resolveResult: (value: string) => void;

  beforeAll(async () => {
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      void outcome(current, request).then((value) => {
        resolveResult(value);
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /**
   * Sends raw bytes (head, then each body part in its own write) and reads what the middleware made of it;
   * `hangUp`: the client goes away after the parts instead of finishing the body.
   */
  async function send(middleware: JsonBodyMiddleware, head: string, parts: Buffer[], hangUp = false) {
    current = middleware;
    result = new Promise((resolve) => (resolveResult = resolve));
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(head);
    for (const part of parts) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      socket.write(part);
    }
    if (hangUp) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      socket.destroy();
    }
    const value = await result;
    socket.destroy();
    return value;
  }

  const json = (text: string) => Buffer.from(text, 'utf8');
  const cases: [string, string | undefined, Buffer[], Record<string, string>?][] = [
    ['an object', 'application/json', [json('{"b":1,"a":{"c":[1,"x"]}}')]],
    [
      'UTF-8 split inside a character',
      'application/json',
      [json('{"n":"Ñan'), json('dú €"}')].flatMap((part, index) =>
        index === 0 ? [part.subarray(0, part.length - 1), part.subarray(part.length - 1)] : [part],
      ),
    ],
    [
      'a byte order mark',
      'application/json',
      [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json('{"a":1}')])],
    ],
    ['only a byte order mark', 'application/json', [Buffer.from([0xef, 0xbb, 0xbf])]],
    ['leading whitespace', 'application/json', [json(' \n\t{"a":1}')]],
    ['only whitespace', 'application/json', [json('   ')]],
    ['malformed JSON', 'application/json', [json('{"a":')]],
    ['a string', 'application/json', [json('"text"')]],
    ['a number after whitespace', 'application/json', [json('  42')]],
    ['an array', 'application/json', [json('[{"a":1}]')]],
    [
      'invalid UTF-8',
      'application/json',
      [Buffer.concat([json('{"a":"'), Buffer.from([0xc3, 0x28, 0xff]), json('"}')])],
    ],
    [
      'a truncated character at the end',
      'application/json',
      [Buffer.concat([json('{"a":1}'), Buffer.from([0xe2, 0x82])])],
    ],
    ['a prototype key', 'application/json', [json('{"__proto__":{"x":1}}')]],
    ['charset=UTF-8', 'application/json; charset=UTF-8', [json('{"a":"é"}')]],
    ['charset=utf-8 without a space', 'application/json;charset=utf-8', [json('{"a":2}')]],
    ['charset=latin1 (express.json refuses it)', 'application/json; charset=latin1', [json('{"a":2}')]],
    ['a +json type', 'application/merge-patch+json', [json('{"a":3}')]],
    ['an upper-case type', 'Application/JSON', [json('{"a":4}')]],
    ['a bad parameter', 'application/json; x', [json('{"a":5}')]],
    ['a body over the limit', 'application/json', [json(`{"a":"${'x'.repeat(1100)}"}`)]],
    ['gzip', 'application/json', [gzipSync(json('{"a":6}'))], { 'Content-Encoding': 'gzip' }],
  ];

  it.each(cases)('%s', async (_name, type, parts, extra = {}) => {
    const body = Buffer.concat(parts);
    const headers = {
      Host: 'x',
      ...(type === undefined ? {} : { 'Content-Type': type }),
      'Content-Length': String(body.length),
      ...extra,
    };
    const head = `POST /v1/x HTTP/1.1\r\n${Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('')}\r\n`;
    const fast = await send(new JsonBodyMiddleware(config), head, parts);
    const reference = await send(new BodyParserOnly(config), head, parts);
    expect(fast).toBe(reference);
  });

  it('a client that goes away mid-body: the same error as raw-body', async () => {
    const head =
      'POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n';
    const parts = [Buffer.from('{"a":')];
    const fast = await send(new JsonBodyMiddleware(config), head, parts, true);
    expect(fast).toMatch(/request\.aborted/);
    expect(fast).toBe(await send(new BodyParserOnly(config), head, parts, true));
  });

  it.each<[string, string, Buffer, Record<string, string>?]>([
    ['plain UTF-8', 'application/json', json('{"a":{"b":[1,0.99999999999999999]}}')],
    ['UTF-8 with a BOM', 'application/json', Buffer.from('\ufeff{"a":{"b":[1,1e400]}}')],
    [
      'gzip',
      'application/json',
      gzipSync(json('{"a":{"b":[1,0.99999999999999999]}}')),
      { 'Content-Encoding': 'gzip' },
    ],
    ['UTF-16LE', 'application/json; charset=utf-16le', Buffer.from('{"a":{"b":[1,-1e400]}}', 'utf16le')],
    ['a +json type', 'application/merge-patch+json', json('{"a":{"b":[1,100.0000000000000001]}}')],
  ])(
    'a number JSON.parse rounds is refused at its path on both readers: %s',
    async (_name, type, body, extra = {}) => {
      const head = `POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n${Object.entries(
        extra,
      )
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n`;
      const fast = await send(new JsonBodyMiddleware(config), head, [body]);
      expect(fast).toMatch(
        /^validation \[\{"path":"a\.b\[1\]","message":"a\.b\[1\] (has more digits|is out of the range)/,
      );
      expect(await send(new BodyParserOnly(config), head, [body])).toBe(fast);
    },
  );

  it('a chunked body with such a number: refused at its path, exact ones pass', async () => {
    const chunked = (text: string) => Buffer.from(`${text.length.toString(16)}\r\n${text}\r\n0\r\n\r\n`);
    const head =
      'POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    expect(await send(new JsonBodyMiddleware(config), head, [chunked('{"amount":9007199254740993}')])).toBe(
      `validation ${JSON.stringify([{ path: 'amount', message: 'amount has more digits than a number can hold exactly', type: 'invalid' }])}`,
    );
    expect(
      await send(new JsonBodyMiddleware(config), head, [chunked('{"amount":0.30000000000000004}')]),
    ).toBe('next=true has=true body={"amount":0.30000000000000004}');
  });

  it('chunked bodies go to express.json', async () => {
    const head =
      'POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const parts = [Buffer.from('7\r\n{"a":1}\r\n0\r\n\r\n')];
    expect(await send(new JsonBodyMiddleware(config), head, parts)).toBe(
      await send(new BodyParserOnly(config), head, parts),
    );
  });
});

describe('assertStorableJson: error paths are built only for the error that names them', () => {
  /** The walk as it was (a path for every key and element), for its answers. */
  function reference(body: unknown): void {
    const stack: { value: unknown; depth: number; path: string }[] = [{ value: body, depth: 0, path: '' }];
    while (stack.length > 0) {
      const { value, depth, path } = stack.pop()!;
      if (typeof value === 'string') {
        if (value.includes('\u0000')) throw ValidationFailedError.single('', 'invalid', 'NUL');
        continue;
      }
      if (value === null || typeof value !== 'object') continue;
      if (depth >= MAX_JSON_DEPTH) throw ValidationFailedError.single('', 'invalid', 'deep');
      const array = Array.isArray(value);
      for (const [key, child] of Object.entries(value)) {
        const childPath = array ? `${path}[${key}]` : path ? `${path}.${key}` : key;
        if (!array && ['__proto__', 'constructor', 'toString'].includes(key))
          throw ValidationFailedError.single(childPath, 'invalid', key);
        stack.push({ value: child, depth: depth + 1, path: childPath });
      }
    }
  }
  const itemOf = (check: (body: unknown) => void, body: unknown) => {
    try {
      check(body);
      return undefined;
    } catch (error) {
      const { path, message } = (error as ValidationFailedError).items[0];
      return { path, message: message.includes('NUL') ? 'NUL' : message.includes('deep') ? 'deep' : path };
    }
  };

  it('names a key of digits as the exact-number check and the validation pipe do: data[0], not data.0', () => {
    const item = (check: () => void) => {
      try {
        check();
      } catch (error) {
        return (error as ValidationFailedError).items[0].path;
      }
      return undefined;
    };
    expect(item(() => assertStorableJson({ data: { 0: { constructor: 1 } } }))).toBe('data[0].constructor');
    expect(item(() => assertExactNumbers('{"data":{"0":12345678901234567}}'))).toBe('data[0]');
  });

  it('a 100,000-element array and 10,000 keys (10 objects of 1,000) pass without building one path', () => {
    const before = storableJsonPaths.built;
    assertStorableJson({
      a: new Array<number>(100_000).fill(0),
      b: Array.from({ length: 1000 }, () => ({ c: 'x' })),
    });
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    assertStorableJson(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`o${i}`, keys(1000)])));
    expect(storableJsonPaths.built).toBe(before);
  });

  it.each([
    ['nested prototype key', '{"a":{"b":[1,{"constructor":1}]}}'],
    ['under an empty key', '{"":{"toString":2}}'],
    ['in an array under an empty key', '{"":[{"__proto__":3}]}'],
    ['at the top', '{"x":1,"constructor":{}}'],
    ['a NUL before a later prototype key', '{"a":"\\u0000","b":{"toString":1}}'],
    ['a prototype key beside a NUL string', '{"a":{"b":"\\u0000"},"constructor":1}'],
    ['too deep', `{"a":${'['.repeat(40)}${']'.repeat(40)}}`],
  ])('%s: the same first error as before, one path built', (_name, text) => {
    const body: unknown = JSON.parse(text);
    const before = storableJsonPaths.built;
    const expected = itemOf(reference, body);
    expect(expected).toBeDefined();
    expect(itemOf(assertStorableJson, body)).toEqual(expected);
    expect(storableJsonPaths.built - before).toBe(expected!.path === '' ? 0 : 1);
  });
});
