import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { guardedLookup, isPublicAddress, PrivateAddressError } from '../../common/net/public-address.js';

export interface SendResult {
  statusCode?: number;
  error?: string;
  /** From Retry-After on a 429 or 503. */
  retryAfterMs?: number;
  durationMs: number;
}

export interface SenderOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  /** At most this much of the receiver's answer is read. */
  maxResponseBytes: number;
}

/**
 * POSTs webhook bodies over node:http with keep-alive agents (one connection
 * pool per host, reused across deliveries). Every connection goes through the
 * SSRF-guarded lookup, so a hostname that resolves to a private address is
 * refused at connect time, whatever it resolved to at registration.
 */
export class WebhookSender {
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(private readonly options: SenderOptions) {
    const lookup = guardedLookup(options.allowPrivate) as unknown as http.AgentOptions['lookup'];
    const agentOptions = { keepAlive: true, maxSockets: 64, maxFreeSockets: 16, timeout: 60_000, lookup };
    this.agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  }

  send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        resolve({ ...result, durationMs: elapsed() });
      };
      let target: URL;
      try {
        target = new URL(url);
        if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('not http(s)');
      } catch {
        return finish({ error: 'invalid webhook URL' });
      }
      // An IP literal never reaches the agent's lookup (net.connect skips it), so check it here.
      const literal = target.hostname.replace(/^\[|\]$/g, '');
      if (!this.options.allowPrivate && net.isIP(literal) !== 0 && !isPublicAddress(literal)) {
        return finish({ error: new PrivateAddressError(literal, literal).message });
      }
      const transport = target.protocol === 'https:' ? https : http;
      const request = transport.request(target, {
        method: 'POST',
        agent: target.protocol === 'https:' ? this.agents.https : this.agents.http,
        headers: { ...headers, 'Content-Length': Buffer.byteLength(body).toString() },
      });
      const deadline = setTimeout(
        () => request.destroy(new Error(`timed out after ${this.options.timeoutMs} ms`)),
        this.options.timeoutMs,
      );
      request.on('response', (response) => {
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > this.options.maxResponseBytes) response.destroy(); // enough: the status is what counts
        });
        const done = () => {
          clearTimeout(deadline);
          finish({
            statusCode: response.statusCode,
            retryAfterMs:
              response.statusCode === 429 || response.statusCode === 503
                ? parseRetryAfter(response.headers['retry-after'])
                : undefined,
          });
        };
        response.on('end', done);
        response.on('close', done);
        response.on('error', done);
      });
      request.on('error', (error) => {
        clearTimeout(deadline);
        finish({ error: error instanceof PrivateAddressError ? error.message : describe(error) });
      });
      request.end(body);
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

function describe(error: Error & { code?: string }): string {
  return error.code ? `${error.code}: ${error.message}` : error.message;
}

export function parseRetryAfter(value: string | undefined): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
