import type dns from 'node:dns';
import net from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { AnswerCap } from '#common/net/answer-cap.js';
import { guardedLookup, isPublicAddress, PrivateAddressError } from '#common/net/public-address.js';
import { parseRetryAfter } from '#common/net/retry-after.js';

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
  /**
   * Connections per origin. A request beyond them waits in the pool's queue for one, its deadline running: the
   * caller keeps the requests it sends to one origin within this (WebhookDeliveryService's slots per origin).
   */
  connectionsPerOrigin: number;
}

/** A webhook URL, parsed and checked once: where to send, or why it cannot be used. */
type Target = { origin: string; path: string } | { error: string };

/** Parsed targets kept (URLs are few: one per application); the cache is emptied when it fills up. */
const MAX_TARGETS = 1000;

/**
 * POSTs webhook bodies with undici (one keep-alive connection pool per origin,
 * reused across deliveries: per request about a third of node:http's CPU).
 * Every new connection goes through the SSRF-guarded lookup, so a hostname
 * that resolves to a private address is refused at connect time, whatever it
 * resolved to at registration; a reused connection is one whose address passed
 * that check. IP literals never reach a lookup and are checked here.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly targets = new Map<string, Target>();

  constructor(private readonly options: SenderOptions) {
    this.agent = new Agent({
      connections: options.connectionsPerOrigin,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      // Our own deadline (below) covers the whole exchange; these only back it up.
      headersTimeout: options.timeoutMs + 1_000,
      bodyTimeout: options.timeoutMs + 1_000,
      connect: {
        timeout: options.timeoutMs,
        lookup: guardedLookup(options.allowPrivate) as unknown as typeof dns.lookup,
      },
    });
  }

  send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now();
    return new Promise((resolve) => {
      const target = this.target(url);
      if ('error' in target) return resolve({ error: target.error, durationMs: 0 });
      const { timeoutMs, maxResponseBytes } = this.options;
      let settled = false;
      let controller: Dispatcher.DispatchController | undefined;
      let statusCode: number | undefined;
      let retryAfterMs: number | undefined;
      const answer = new AnswerCap(maxResponseBytes, false);
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve({ ...result, durationMs: Math.round(performance.now() - started) });
      };
      const deadline = setTimeout(() => {
        const error = new Error(`timed out after ${timeoutMs} ms`);
        finish({ error: error.message });
        controller?.abort(error); // not started yet (waiting for a connection): aborted when it starts
      }, timeoutMs);
      this.agent.dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers, body },
        {
          onRequestStart(started) {
            controller = started;
            if (settled) started.abort(new Error('abandoned'));
          },
          onResponseStart(_controller, status, responseHeaders) {
            if (status < 200) return; // 1xx: the final answer follows
            statusCode = status;
            if (status === 429 || status === 503) {
              const value = responseHeaders['retry-after'];
              retryAfterMs = parseRetryAfter(Array.isArray(value) ? value[0] : value);
            }
          },
          onResponseData(current, chunk) {
            // Enough: the status is what counts. The connection is closed rather than drained.
            if (!answer.take(chunk)) {
              finish({ statusCode, retryAfterMs });
              current.abort(new Error('answer larger than the cap'));
            }
          },
          onResponseEnd() {
            finish({ statusCode, retryAfterMs });
          },
          onResponseError(_controller, error) {
            finish(
              statusCode !== undefined
                ? { statusCode, retryAfterMs } // the answer's status arrived; its body did not finish
                : { error: privateAddressError(error)?.message ?? describe(error) },
            );
          },
        },
      );
    });
  }

  /** The origin a URL is sent to (one connection pool each), or undefined when the URL cannot be used. */
  origin(url: string): string | undefined {
    const target = this.target(url);
    return 'error' in target ? undefined : target.origin;
  }

  private target(url: string): Target {
    let target = this.targets.get(url);
    if (target) return target;
    target = this.parse(url);
    if (this.targets.size >= MAX_TARGETS) this.targets.clear();
    this.targets.set(url, target);
    return target;
  }

  private parse(url: string): Target {
    let parsed: URL;
    try {
      parsed = new URL(url);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      return { error: 'invalid webhook URL' };
    }
    // An IP literal never reaches the lookup (net.connect skips it), so check it here.
    const literal = parsed.hostname.replace(/^\[|\]$/g, '');
    if (!this.options.allowPrivate && net.isIP(literal) !== 0 && !isPublicAddress(literal)) {
      return { error: new PrivateAddressError(literal, literal).message };
    }
    return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
  }

  async close(): Promise<void> {
    await this.agent.destroy();
  }
}

/** The SSRF guard's refusal, as the connection reported it (itself, or as the cause of undici's error). */
function privateAddressError(error: Error): PrivateAddressError | undefined {
  if (error instanceof PrivateAddressError) return error;
  return error.cause instanceof PrivateAddressError ? error.cause : undefined;
}

function describe(error: Error & { code?: string }): string {
  return error.code ? `${error.code}: ${error.message}` : error.message;
}
