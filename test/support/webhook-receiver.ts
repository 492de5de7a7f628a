import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { compactVerify, createLocalJWKSet, type CompactJWSHeaderParameters, type JSONWebKeySet } from 'jose';

/** One request as the receiver saw it. */
export interface ReceivedWebhook {
  /** Position among all requests this receiver got (0-based). */
  index: number;
  /** The Webhook-Id header (the event id). */
  id: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Date.now() when the whole body had arrived. */
  receivedAt: number;
  /** Date.now() just before the answer was written; undefined while unanswered (or never answered). */
  answeredAt?: number;
  status?: number;
  /** The answer was flushed completely (a 2xx here is an acknowledgement). */
  finished: boolean;
  /** Body bytes written (an `endless` answer counts them until the sender hangs up). */
  bytesSent: number;
  /**
   * Date.now() when the connection closed before the answer was complete (the sender hung up, or, for a request
   * left hanging, gave up).
   */
  abandonedAt?: number;
}

/**
 * What to answer: a status (after an optional delay; `endless`: with a body that never ends, written
 * as fast as the sender reads it), or never answer at all.
 */
export type Reply =
  { status: number; headers?: Record<string, string>; delayMs?: number; endless?: boolean } | 'hang';

export type Responder = (request: ReceivedWebhook, receiver: WebhookReceiver) => Reply;

/**
 * A real HTTP webhook receiver on 127.0.0.1 (no mocks): records every request
 * and answers as its responder says.
 */
export class WebhookReceiver {
  readonly requests: ReceivedWebhook[] = [];
  private readonly hanging = new Set<http.ServerResponse>();

  private constructor(
    private readonly server: http.Server,
    public responder: Responder,
  ) {}

  static async start(responder: Responder = () => ({ status: 200 })): Promise<WebhookReceiver> {
    const server = http.createServer();
    const receiver = new WebhookReceiver(server, responder);
    server.on('request', (req, res) => receiver.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/webhooks'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Every request carrying this Webhook-Id, in arrival order. */
  attemptsOf(id: string): ReceivedWebhook[] {
    return this.requests.filter((request) => request.id === id);
  }

  /** Requests answered with a 2xx that reached the wire. */
  acknowledged(id?: string): ReceivedWebhook[] {
    return this.requests.filter(
      (request) =>
        (id === undefined || request.id === id) &&
        request.finished &&
        request.status !== undefined &&
        request.status >= 200 &&
        request.status < 300,
    );
  }

  /**
   * Answers from now on as `responder` says, and drops the requests it held without answering, as a receiver
   * that restarts does (their senders see the connection close).
   */
  recover(responder: Responder): void {
    this.responder = responder;
    for (const response of this.hanging) response.destroy();
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedWebhook = {
        index: this.requests.length,
        id: String(req.headers['webhook-id'] ?? ''),
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
        finished: false,
        bytesSent: 0,
      };
      this.requests.push(received);
      const reply = this.responder(received, this);
      if (reply === 'hang') {
        this.hanging.add(res);
        res.on('close', () => {
          this.hanging.delete(res);
          received.abandonedAt = Date.now();
        });
        return;
      }
      const answer = () => {
        received.status = reply.status;
        received.answeredAt = Date.now();
        res.on('finish', () => (received.finished = true));
        res.on('close', () => {
          if (!received.finished) received.abandonedAt = Date.now();
        });
        res.writeHead(reply.status, { 'Content-Type': 'text/plain', ...reply.headers });
        if (reply.endless) return writeEndlessly(res, received);
        res.end(reply.status < 300 ? 'ok' : 'not now');
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  }
}

/** Writes 64 KiB chunks, honouring back-pressure, until the connection closes. */
function writeEndlessly(res: http.ServerResponse, received: ReceivedWebhook): void {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const pump = () => {
    while (!res.destroyed) {
      received.bytesSent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
  };
  pump();
}

/** The poll helpers, where the suites have long imported them from. */
export { pollUntil, sleep } from './poll.js';

export interface VerifiedWebhook {
  payload: unknown;
  header: CompactJWSHeaderParameters;
}

/** Verifies a webhook body as a receiver would: compact JWS, ES256 only, key from the JWKS by kid. */
export async function verifyWebhook(body: string, jwks: JSONWebKeySet): Promise<VerifiedWebhook> {
  const { payload, protectedHeader } = await compactVerify(body, createLocalJWKSet(jwks), {
    algorithms: ['ES256'],
  });
  return { payload: JSON.parse(new TextDecoder().decode(payload)) as unknown, header: protectedHeader };
}

/**
 * The suite's Redis with a keyspace (logical database) of the caller's own, or nothing on the
 * PostgreSQL backend. Every app of the suite uses the queue name `webhooks`; on one shared
 * keyspace, apps in files that run in parallel would take each other's delivery jobs (and skip
 * them, since the event is not in their database), delaying deliveries until a sweep.
 */
export function isolatedRedisEnv(database: number): Record<string, string> {
  const base = process.env.TEST_REDIS_URL;
  if (!base) return {};
  const url = new URL(base);
  url.pathname = `/${database}`;
  return { REDIS_URL: url.toString() };
}
