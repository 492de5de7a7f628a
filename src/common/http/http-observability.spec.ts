import { createServer, request as httpRequest, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import helmet from 'helmet';
import pino from 'pino';
import { MetricsRegistry } from '../metrics/metrics.registry.js';
import { httpObservability, recordHeaders } from './http-observability.js';

describe('recordHeaders', () => {
  it('records what helmet sets and removes, once', () => {
    const headers = recordHeaders(helmet({ contentSecurityPolicy: false }));
    const names = headers.map(([name]) => name.toLowerCase());
    expect(names).toContain('x-content-type-options');
    expect(names).toContain('strict-transport-security');
    expect(names).not.toContain('content-security-policy');
    expect(headers).toContainEqual(['X-Powered-By', undefined]);
  });

  it('refuses a middleware that does not call next at once', () => {
    expect(() => recordHeaders(() => undefined)).toThrow(/did not call next/);
  });
});

/** The answers of the test's server, whose prototype the middleware observes. */
class ObservedResponse extends ServerResponse {}

describe('httpObservability', () => {
  let server: Server;
  let port: number;
  const lines: Record<string, unknown>[] = [];
  const metrics = new MetricsRegistry();
  /** Each answer's own `close` listeners when the handler got it. */
  const closeListeners: number[] = [];
  /** Called when the /hang handler holds a request (the test that sends one sets it). */
  let hanging = (): void => undefined;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const logger = pino({ level: 'info' }, sink);
    const observe = httpObservability({
      logger: () => logger,
      metrics,
      headersFor: () => [
        ['X-Content-Type-Options', 'nosniff'],
        ['X-Powered-By', undefined],
      ],
      quiet: (path) => path.startsWith('/health'),
      responsePrototype: ObservedResponse.prototype,
    });
    server = createServer({ ServerResponse: ObservedResponse }, (req, res) => {
      res.setHeader('X-Powered-By', 'should be removed');
      observe(req, res, () => {
        closeListeners.push(res.listenerCount('close'));
        const path = (req.url ?? '').split('?')[0];
        if (path === '/hang') {
          hanging(); // answered never: the client aborts
          return;
        }
        res.statusCode = path === '/bad' ? 400 : path === '/boom' ? 500 : 200;
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const get = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
      });
      req.on('error', reject);
      req.end();
    });

  const until = async (check: () => boolean) => {
    for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    return check();
  };

  it('puts no listener on an answer: it observes their end on their prototype', async () => {
    closeListeners.length = 0;
    await get('/ok');
    await get('/bad');
    expect(closeListeners).toEqual([0, 0]);
  });

  it('sets the request id and the recorded headers', async () => {
    const answer = await get('/ok', { 'X-Request-Id': 'trace-0001.a_b' });
    expect(answer.headers['x-request-id']).toBe('trace-0001.a_b');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers['x-powered-by']).toBeUndefined();
  });

  it('logs 4xx at info and 5xx at error with the path only, and 2xx not at all at level info', async () => {
    lines.length = 0;
    await get('/ok?secret=1');
    await get('/bad?cvu=0000003100000000000001', { 'X-Request-Id': 'bad-request-1' });
    await get('/boom', { Authorization: 'Bearer eyJsecret' });
    await get('/health/live');
    expect(await until(() => lines.length >= 2)).toBe(true);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'request completed',
        req: { id: 'bad-request-1', method: 'GET', path: '/bad' },
        res: { statusCode: 400 },
        responseTime: expect.any(Number),
      }),
      expect.objectContaining({ level: 50, req: expect.objectContaining({ path: '/boom' }) }),
    ]);
    expect(JSON.stringify(lines)).not.toMatch(/secret|0000003100000000000001|eyJ/);
  });

  it('logs an aborted request at error and counts every request in the histogram', async () => {
    lines.length = 0;
    await new Promise<void>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/hang' });
      req.on('error', () => resolve());
      // Aborted once the server holds it (on a timer, a stalled loop could abort it before it arrived).
      hanging = () => req.destroy();
      req.end();
    });
    expect(await until(() => lines.length >= 1)).toBe(true);
    expect(lines[0]).toEqual(
      expect.objectContaining({
        level: 50,
        msg: 'request aborted',
        req: expect.objectContaining({ path: '/hang' }),
      }),
    );
    const scraped = await metrics.registry.metrics();
    expect(scraped).toMatch(
      /http_request_duration_seconds_count\{method="GET",route="unmatched",status="aborted"\} 1/,
    );
    expect(scraped).toMatch(
      /http_request_duration_seconds_count\{method="GET",route="unmatched",status="200"\} [2-9]/,
    );
  });
});
