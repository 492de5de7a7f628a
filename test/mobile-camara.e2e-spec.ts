import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { SharedRateLimitStores } from '../src/common/http/shared-rate-limit-store.js';
import { accessToken, registerClient, subjectToken } from './support/auth.js';
import { bearer } from './support/identity.js';
import { freePort } from './support/processes.js';
import { startTcpProxy, type Fault, type TcpProxy } from './support/tcp-proxy.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/webhook-receiver.js';

const CAMARA_TOKEN = 'camara-two-legged-token';

interface SeenRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

type Reply = {
  status: number;
  body?: unknown;
  raw?: string;
  delayMs?: number;
  headers?: Record<string, string>;
  /** A JSON answer of this many bytes, written in 16 KiB chunks as fast as the client reads them. */
  largeBytes?: number;
};

/** How a large answer went: the bytes written, and whether it was written whole or the client hung up first. */
interface LargeAnswer {
  bytesWritten: number;
  complete: boolean;
  closedEarly: boolean;
}

/** A CAMARA SIM Swap endpoint on 127.0.0.1 (node:http): records requests and answers as told. */
class CamaraServer {
  readonly requests: SeenRequest[] = [];
  readonly largeAnswers: LargeAnswer[] = [];
  reply: Reply = { status: 200, body: { swapped: false } };

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<CamaraServer> {
    const server = http.createServer();
    const camara = new CamaraServer(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        camara.requests.push({
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const reply = camara.reply;
        const answer = () => {
          if (res.destroyed) return;
          res.writeHead(reply.status, { 'Content-Type': 'application/json', ...reply.headers });
          if (reply.largeBytes !== undefined) return camara.writeLarge(res, reply.largeBytes);
          res.end(reply.raw ?? (reply.body === undefined ? '' : JSON.stringify(reply.body)));
        };
        if (reply.delayMs) setTimeout(answer, reply.delayMs).unref();
        else answer();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    return camara;
  }

  /** `{"swapped":false,"pad":"xxx…"}` of `total` bytes, honouring back-pressure, until written or cut off. */
  private writeLarge(res: http.ServerResponse, total: number): void {
    const answer: LargeAnswer = { bytesWritten: 0, complete: false, closedEarly: false };
    this.largeAnswers.push(answer);
    const head = Buffer.from('{"swapped":false,"pad":"');
    const tail = Buffer.from('"}');
    const filler = Buffer.alloc(16 * 1024, 'x');
    res.on('finish', () => (answer.complete = true));
    res.on('close', () => (answer.closedEarly = !answer.complete));
    const write = (chunk: Buffer) => {
      answer.bytesWritten += chunk.length;
      return res.write(chunk);
    };
    write(head);
    const pump = () => {
      while (!res.destroyed) {
        const left = total - tail.length - answer.bytesWritten;
        if (left <= 0) {
          answer.bytesWritten += tail.length;
          return void res.end(tail);
        }
        if (!write(left >= filler.length ? filler : filler.subarray(0, left)))
          return void res.once('drain', pump);
      }
    };
    pump();
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/sim-swap/v1'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const expectNoRoutes400 = (response: request.Response) => {
  expect({ status: response.status, type: response.headers['content-type'], body: response.text }).toEqual({
    status: 400,
    type: expect.stringMatching(/^text\/html/),
    body: 'NO ROUTES',
  });
};

/** The provider failed: 503 with Retry-After (1 s unless the provider asked for its own, decision 0078). */
const expectUnavailable = (response: request.Response, retryAfter = '1') => {
  expect(response.status).toBe(503);
  expect(response.headers['retry-after']).toBe(retryAfter);
  expect(response.body).toStrictEqual({
    name: 'ServiceUnavailableError',
    message: 'The SIM swap provider is not available',
    detail: { checks: { simSwapProvider: 'down' } },
  });
};

/** A test application whose SIM swap checks go to the CAMARA endpoint at `url`, with `env` besides. */
const startCamaraApp = (url: string, env: Record<string, string> = {}) =>
  startTestApp({
    env: { SIM_SWAP_PROVIDER: 'camara', CAMARA_SIM_SWAP_URL: url, CAMARA_ACCESS_TOKEN: CAMARA_TOKEN, ...env },
  });

/** The units the SIM swap limit `limit` (simswap-user, simswap-app) holds for `key` in the shared store. */
const counted = async (t: TestApp, limit: string, key: string): Promise<number> =>
  (await t.app.get(SharedRateLimitStores).store(limit).get?.(key))?.totalHits ?? 0;

/** POST /v1/mobile/simSwap of a number that is not a simulator test number. */
const checkSimSwap = (t: TestApp, authorization: string) =>
  request(t.http)
    .post('/v1/mobile/simSwap')
    .set('Authorization', authorization)
    .send({ phoneNumber: '541123456789' });

describe('SIM swap through a CAMARA SIM Swap endpoint', () => {
  let camara: CamaraServer;
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    camara = await CamaraServer.start();
    t = await startCamaraApp(`${camara.url()}/`, { CAMARA_TIMEOUT_MS: '400' });
    token = await accessToken(t.http, await registerClient(t.app, 'camara'));
  });
  afterAll(async () => {
    await t?.close();
    await camara?.close();
  });
  beforeEach(() => {
    camara.requests.length = 0;
  });

  const check = (phoneNumber: string) =>
    request(t.http).post('/v1/mobile/simSwap').set('Authorization', `Bearer ${token}`).send({ phoneNumber });

  it('POSTs {base}/check with the E.164 number, maxAge 240 and the bearer token', async () => {
    camara.reply = { status: 200, body: { swapped: false } };
    expect((await check('541123456789')).status).toBe(200);
    expect(camara.requests).toHaveLength(1);
    const [seen] = camara.requests;
    expect(seen.method).toBe('POST');
    expect(seen.path).toBe('/sim-swap/v1/check');
    expect(seen.headers.authorization).toBe(`Bearer ${CAMARA_TOKEN}`);
    expect(seen.headers['content-type']).toMatch(/^application\/json/);
    expect(seen.headers['x-correlator']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(seen.body)).toStrictEqual({ phoneNumber: '+541123456789', maxAge: 240 });
  });

  it('answers that the SIM was swapped when CAMARA says swapped: true', async () => {
    camara.reply = { status: 200, body: { swapped: true } };
    const response = await check('541123456789');
    expect(response.status).toBe(200);
    expect(response.body).toStrictEqual({
      message: 'The SIM card of this phone number was swapped within the last 240 hours.',
    });
  });

  it('answers that it was not swapped when CAMARA says swapped: false', async () => {
    camara.reply = { status: 200, body: { swapped: false } };
    const response = await check('541123456789');
    expect(response.status).toBe(200);
    expect(response.body).toStrictEqual({
      message: 'The SIM card of this phone number was not swapped within the last 240 hours.',
    });
  });

  it.each([
    [404, 'IDENTIFIER_NOT_FOUND'],
    [404, undefined],
    [404, 'SIM_SWAP.UNKNOWN_PHONE_NUMBER'],
    [422, 'SERVICE_NOT_APPLICABLE'],
    [422, 'UNSUPPORTED_IDENTIFIER'],
    [400, 'INVALID_ARGUMENT'],
  ])('maps %s %s (the number cannot be checked there) to 400 NO ROUTES', async (status, code) => {
    camara.reply = {
      status,
      body: code ? { status, code, message: 'the operator cannot check this number' } : undefined,
    };
    expectNoRoutes400(await check('541123456789'));
    expect(camara.requests).toHaveLength(1);
  });

  it.each([
    [400, 'OUT_OF_RANGE'],
    [401, 'UNAUTHENTICATED'],
    [403, 'PERMISSION_DENIED'],
    [422, 'UNNECESSARY_IDENTIFIER'],
    [429, 'QUOTA_EXCEEDED'],
    [500, 'INTERNAL'],
    [502, undefined],
    [503, 'UNAVAILABLE'],
  ])('maps %s %s (the provider or our credentials failed) to 503', async (status, code) => {
    camara.reply = { status, body: code ? { status, code, message: 'no' } : undefined };
    expectUnavailable(await check('541123456789'));
  });

  it.each([
    ['503 with Retry-After 7', { status: 503, headers: { 'Retry-After': '7' } }, '7'],
    ['429 with Retry-After 30', { status: 429, headers: { 'Retry-After': '30' } }, '30'],
    ['503 with Retry-After an hour (at most 60)', { status: 503, headers: { 'Retry-After': '3600' } }, '60'],
    ['503 with Retry-After 0 (at least 1)', { status: 503, headers: { 'Retry-After': '0' } }, '1'],
    ['503 with a Retry-After that is not one', { status: 503, headers: { 'Retry-After': 'soon' } }, '1'],
    [
      '500 with Retry-After (read on 429 and 503 only)',
      { status: 500, headers: { 'Retry-After': '9' } },
      '1',
    ],
  ] as const)('passes on the provider’s Retry-After, bounded: %s', async (_, reply, expected) => {
    camara.reply = { ...reply, body: { status: reply.status, code: 'UNAVAILABLE', message: 'no' } };
    expectUnavailable(await check('541123456789'), expected);
  });

  it('reads a Retry-After the provider sent as an HTTP date, within the same bounds', async () => {
    const at = (ms: number) => ({ status: 503, headers: { 'Retry-After': new Date(ms).toUTCString() } });
    camara.reply = at(Date.now() + 3_600_000);
    expectUnavailable(await check('541123456789'), '60');
    camara.reply = at(Date.now() - 3_600_000);
    expectUnavailable(await check('541123456789'), '1');
  });

  it('maps a malformed 200 (no boolean swapped, not JSON) to 503', async () => {
    camara.reply = { status: 200, body: { swapped: 'yes' } };
    expectUnavailable(await check('541123456789'));
    camara.reply = { status: 200, raw: '<html>maintenance</html>' };
    expectUnavailable(await check('541123456789'));
  });

  it('maps a redirect to 503 (not followed)', async () => {
    camara.reply = { status: 302, headers: { Location: 'http://127.0.0.1:1/elsewhere' } };
    expectUnavailable(await check('541123456789'));
    expect(camara.requests).toHaveLength(1);
  });

  it('maps a timeout (CAMARA_TIMEOUT_MS) to 503', async () => {
    camara.reply = { status: 200, body: { swapped: true }, delayMs: 1500 };
    const started = Date.now();
    expectUnavailable(await check('541123456789'));
    expect(Date.now() - started).toBeLessThan(1400);
  });

  it('validates the number before calling the provider', async () => {
    expectNoRoutes400(await check('54112345678'));
    expect(camara.requests).toHaveLength(0);
  });
});

// The default timeout (5 s) here: time enough to read a whole large answer, so only the cap can cut it short.
describe('CAMARA settings (maximum age, the Argentine mobile format) and answers larger than 64 KiB', () => {
  let camara: CamaraServer;
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    camara = await CamaraServer.start();
    t = await startCamaraApp(camara.url('/camara/sim-swap/v2'), {
      CAMARA_MAX_AGE_HOURS: '24',
      CAMARA_PHONE_FORMAT: 'ar-mobile-9',
    });
    token = await accessToken(t.http, await registerClient(t.app, 'camara-24h'));
  });
  afterAll(async () => {
    await t?.close();
    await camara?.close();
  });

  const check = () =>
    request(t.http)
      .post('/v1/mobile/simSwap')
      .set('Authorization', `Bearer ${token}`)
      .send({ phoneNumber: '541123456789' });

  it('sends the configured maxAge and the +54 9 mobile form, and says so in the message', async () => {
    camara.reply = { status: 200, body: { swapped: true } };
    const response = await check();
    expect(response.status).toBe(200);
    expect(response.body).toStrictEqual({
      message: 'The SIM card of this phone number was swapped within the last 24 hours.',
    });
    expect(camara.requests.map((seen) => [seen.path, JSON.parse(seen.body)])).toEqual([
      ['/camara/sim-swap/v2/check', { phoneNumber: '+5491123456789', maxAge: 24 }],
    ]);
  });

  it('is not read past 64 KiB: the connection is closed while the provider is still writing (503)', async () => {
    const total = 32 * 1024 * 1024;
    camara.reply = { status: 200, largeBytes: total };
    expectUnavailable(await check());
    await pollUntil(
      'the provider to see the connection end',
      () =>
        camara.largeAnswers.length === 1 &&
        (camara.largeAnswers[0].complete || camara.largeAnswers[0].closedEarly),
    );
    const [answer] = camara.largeAnswers;
    // What was written before the hang-up is the cap plus what the sockets' buffers took, far from the whole.
    expect(answer).toEqual({ bytesWritten: expect.any(Number), complete: false, closedEarly: true });
    expect(answer.bytesWritten).toBeLessThan(total / 2);
  });

  it('reads an answer just under 64 KiB as before', async () => {
    camara.reply = { status: 200, largeBytes: 64 * 1024 - 10 };
    const response = await check();
    expect(response.status).toBe(200);
    expect(response.body).toStrictEqual({
      message: 'The SIM card of this phone number was not swapped within the last 24 hours.',
    });
  });
});

// One application per describe: passport strategies are registered process-wide, so two test apps
// alive at once would verify tokens with the keys of the last one started.
describe('CAMARA endpoint unreachable', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await startCamaraApp(`http://127.0.0.1:${await freePort()}/sim-swap/v1`);
    token = await accessToken(t.http, await registerClient(t.app, 'camara-down'));
  });
  afterAll(() => t?.close());

  it('maps a refused connection to 503', async () => {
    expectUnavailable(
      await request(t.http)
        .post('/v1/mobile/simSwap')
        .set('Authorization', `Bearer ${token}`)
        .send({ phoneNumber: '541123456789' }),
    );
  });
});

// Decision 0080: a check the provider certainly did not make gives its units back; one it may have made keeps them.
// The provider sits behind a TCP proxy, which refuses connections while cut, and can reset one after its answer.
describe('SIM swap limits when the provider fails (per application 3 a minute, per user 2 an hour here)', () => {
  let camara: CamaraServer;
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    camara = await CamaraServer.start();
    proxy = await startTcpProxy(camara.port);
    t = await startCamaraApp(`http://127.0.0.1:${proxy.port}/sim-swap/v1`, {
      // Long enough that a loaded machine records the request before it: the timeout case is one after it.
      CAMARA_TIMEOUT_MS: '2000',
      SIM_SWAP_APP_LIMIT_PER_MINUTE: '3',
      SIM_SWAP_USER_LIMIT_PER_HOUR: '2',
    });
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await camara?.close();
  });
  beforeEach(() => {
    camara.requests.length = 0;
  });

  /** A new application's access token, and a token of one of its users. */
  const newCaller = async (name: string) => {
    const client = await registerClient(t.app, name);
    return {
      app: bearer(await accessToken(t.http, client)),
      user: bearer(await subjectToken(client, randomUUID())),
    };
  };
  const check = (authorization: string) => checkSimSwap(t, authorization);
  const answers = (reply: Reply): undefined => {
    camara.reply = reply;
  };
  const notSwapped: Reply = { status: 200, body: { swapped: false } };

  it('costs no check while the provider refuses connections or refuses the request: after it recovers, the user and the application have all their checks', async () => {
    const { app, user } = await newCaller('camara-outage');
    await proxy.cut();
    try {
      for (let i = 0; i < 4; i++) expectUnavailable(await check(user));
    } finally {
      await proxy.restore();
    }
    const refusals: Reply[] = [
      [503, 'UNAVAILABLE'],
      [429, 'QUOTA_EXCEEDED'],
      [401, 'UNAUTHENTICATED'],
      [403, 'PERMISSION_DENIED'],
      [400, 'OUT_OF_RANGE'],
      [422, 'UNNECESSARY_IDENTIFIER'],
    ].map(([status, code]) => ({ status: Number(status), body: { status, code, message: 'no' } }));
    refusals.push({ status: 503, headers: { 'Retry-After': '2' } });
    for (const reply of refusals) {
      answers(reply);
      expect((await check(user)).status).toBe(503);
    }
    // The refused connections never reached the provider; each refusal did.
    expect(camara.requests).toHaveLength(refusals.length);
    answers(notSwapped);
    expect([(await check(user)).status, (await check(user)).status]).toEqual([200, 200]);
    const perUser = await check(user);
    expectNoRoutes400(perUser);
    expect(Number(perUser.headers['retry-after'])).toBeGreaterThan(60); // the user's hour: two checks made
    expect((await check(app)).status).toBe(200);
    expectNoRoutes400(await check(app)); // the application's minute: three checks made
  });

  it('never sends a number with a leading 0 (not E.164): 400 NO ROUTES, no request, no unit of either limit (decision 0086)', async () => {
    const client = await registerClient(t.app, 'camara-leading-zero');
    const subject = randomUUID();
    const callers = [bearer(await subjectToken(client, subject)), bearer(await accessToken(t.http, client))];
    // What an operator answers `+012345678901`: sent, the check would be one it may have made, and count (0080).
    answers({ status: 400, body: { status: 400, code: 'INVALID_ARGUMENT', message: 'phoneNumber' } });
    for (const authorization of callers) {
      expectNoRoutes400(
        await request(t.http)
          .post('/v1/mobile/simSwap')
          .set('Authorization', authorization)
          .send({ phoneNumber: '012345678901' }),
      );
    }
    expect(camara.requests).toHaveLength(0);
    expect(await counted(t, 'simswap-user', `${client.appId}:${subject}`)).toBe(0);
    expect(await counted(t, 'simswap-app', client.appId)).toBe(0);
  });

  it.each<[string, () => Fault | undefined, 'unavailable' | 'no routes']>([
    [
      'a timeout once the provider has the request',
      () => answers({ status: 200, body: { swapped: true }, delayMs: 5000 }),
      'unavailable',
    ],
    [
      'a connection reset as the provider answers',
      () => {
        answers({ status: 200, body: { swapped: true } });
        return proxy.cutAtAnswerTo(Buffer.from('/check'));
      },
      'unavailable',
    ],
    [
      'a 200 that is not a CAMARA answer',
      () => answers({ status: 200, raw: '<html>maintenance</html>' }),
      'unavailable',
    ],
    [
      'a 500',
      () => answers({ status: 500, body: { status: 500, code: 'INTERNAL', message: 'no' } }),
      'unavailable',
    ],
    ['a 502', () => answers({ status: 502 }), 'unavailable'],
    // What a gateway in front of the provider answers when its upstream reset the connection, maybe after it
    // had the request: no CAMARA body, no Retry-After.
    ['a bare 503', () => answers({ status: 503 }), 'unavailable'],
    ['a 504', () => answers({ status: 504 }), 'unavailable'],
    [
      'a redirect',
      () => answers({ status: 302, headers: { Location: 'http://127.0.0.1:9/elsewhere' } }),
      'unavailable',
    ],
    [
      'a 404 IDENTIFIER_NOT_FOUND (the number cannot be checked there)',
      () => answers({ status: 404, body: { status: 404, code: 'IDENTIFIER_NOT_FOUND', message: 'no' } }),
      'no routes',
    ],
    [
      'a 422 SERVICE_NOT_APPLICABLE (the number cannot be checked there)',
      () => answers({ status: 422, body: { status: 422, code: 'SERVICE_NOT_APPLICABLE', message: 'no' } }),
      'no routes',
    ],
  ])('keeps the unit of a check the provider may have made: %s', async (_, fail, answer) => {
    const { user } = await newCaller('camara-kept');
    // A 503 first: its unit comes back, so the user still has both checks of its hour.
    answers({ status: 503, body: { status: 503, code: 'UNAVAILABLE', message: 'no' } });
    expectUnavailable(await check(user));
    const fault = fail();
    const failed = await check(user);
    if (answer === 'no routes') expectNoRoutes400(failed);
    else expectUnavailable(failed);
    expect(camara.requests).toHaveLength(2); // the provider received the request
    if (fault) expect(fault.fired).toBe(true);
    answers(notSwapped);
    expect((await check(user)).status).toBe(200);
    const perUser = await check(user);
    expectNoRoutes400(perUser);
    expect(Number(perUser.headers['retry-after'])).toBeGreaterThan(60); // the user's hour: the failure counted
  });
});

describe('CAMARA endpoint whose name does not resolve (per user 1 check an hour here)', () => {
  let t: TestApp;

  beforeAll(async () => {
    // RFC 6761: no name under .invalid ever resolves.
    t = await startCamaraApp('http://camara-sim-swap.invalid/sim-swap/v1', {
      SIM_SWAP_USER_LIMIT_PER_HOUR: '1',
      // Longer than a slow resolver takes to say the name does not exist: a timeout would be a check the
      // provider may have made, which counts.
      CAMARA_TIMEOUT_MS: '30000',
    });
  });
  afterAll(() => t?.close());

  it('answers 503 each time and costs the user and the application no check (decision 0080)', async () => {
    const client = await registerClient(t.app, 'camara-no-name');
    const subject = randomUUID();
    const user = bearer(await subjectToken(client, subject));
    for (let i = 0; i < 3; i++) expectUnavailable(await checkSimSwap(t, user));
    expect(await counted(t, 'simswap-user', `${client.appId}:${subject}`)).toBe(0);
    expect(await counted(t, 'simswap-app', client.appId)).toBe(0);
  }, 120_000);
});
