import { KeyObject, sign, type webcrypto } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { CryptoKey } from 'jose';
import type { SigningKey } from '#modules/auth/signing-keys.service.js';

interface Prepared {
  /** The protected header's JSON up to its last member, without the closing brace (`{"alg":…,"typ":"JWT"`). */
  headerStart: string;
  /** The key's number in the signing thread: its index in `keys`. */
  slot: number;
}

/**
 * What one attempt's signature also covers, in the protected header as `webhook-id`, `webhook-timestamp` and
 * `webhook-app` (Standard Webhooks signs `{id}.{timestamp}.{body}`; our body is the contract's payload, so they go
 * in the header): a receiver checks the first two against the `Webhook-Id` and `Webhook-Timestamp` headers, so a
 * captured body cannot be sent again under another id, nor long after its attempt (decision 0008's amendment),
 * and the third against its own client id, so a body made for another application cannot be sent to it
 * (one key signs every application's webhooks: decision 0076).
 */
export interface SignedAttempt {
  /** The event id, the `Webhook-Id` header. */
  id: string;
  /** Seconds since the epoch, the `Webhook-Timestamp` header. */
  timestamp: number;
  /** The receiving application's id (its client id). */
  app: string;
}

/** An item of a batch for the signing thread: a key to keep, or an input to sign with a kept key. */
type Item = { slot: number; key: KeyObject } | { id: number; slot: number; input: string };
/** Its answer to an input: the base64url signature, or why there is none. */
type Answer = { id: number; signature: string } | { id: number; error: string };

interface Waiting {
  resolve: (jws: string) => void;
  reject: (error: Error) => void;
  input: string;
}

/**
 * The signing thread's program (plain CommonJS, evaluated: the same under ts-jest and in dist/): for each
 * batch, in order, it keeps the keys and signs the inputs, and answers the batch in one message.
 */
const SIGNING_THREAD = `
const { parentPort } = require('node:worker_threads');
const { sign } = require('node:crypto');
const keys = new Map();
parentPort.on('message', (batch) => {
  const answers = [];
  for (const item of batch) {
    if (item.key) {
      keys.set(item.slot, item.key);
      continue;
    }
    try {
      const signature = sign('sha256', Buffer.from(item.input), {
        key: keys.get(item.slot),
        dsaEncoding: 'ieee-p1363',
      });
      answers.push({ id: item.id, signature: signature.toString('base64url') });
    } catch (error) {
      answers.push({ id: item.id, error: String(error && error.message ? error.message : error) });
    }
  }
  parentPort.postMessage(answers);
});
`;

/** The ES256 signature of a JWS signing input, base64url, r‖s (what the signing thread's program computes). */
function signInput(key: KeyObject, input: string): string {
  return sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');
}

/**
 * Signs webhook bodies as compact JWS (ES256, protected header `{alg, kid, typ: 'JWT', 'webhook-id',
 * 'webhook-timestamp', 'webhook-app'}`, the same bytes jose's CompactSign writes) with node:crypto directly:
 * the CryptoKey converted once to a KeyObject and the header's key part written once per key, and the signature
 * in the JWS form (r‖s, `ieee-p1363`). jose goes through WebCrypto (a job on the thread pool with its own key
 * handling per signature); this is ≈7× cheaper.
 *
 * The ECDSA itself (≈25 µs here) runs on one signing thread of its own (decision 0039), neither on the
 * worker's event loop, which every delivery passes through, nor on libuv's pool, whose four threads each
 * signature woke to compete with the loop and PostgreSQL for the cores, and which DNS lookups of receivers'
 * hosts share (a slow resolver would hold every signature behind it). The signatures asked for in one turn of
 * the loop (a claimed batch's) go to the thread as one message and come back as one: the thread signs them
 * back to back. It starts with the first signature, keeps the process alive only while signatures wait, and
 * is started again if it ever exits (what it was signing fails, and is delivered again as any failed attempt
 * is). The one exception: a single signature while nothing waits for the thread (an idle worker's delivery) is
 * signed on the loop (see send).
 */
export class WebhookSigner {
  private readonly prepared = new WeakMap<CryptoKey, Prepared>();
  private readonly keys: KeyObject[] = [];
  private thread?: Worker;
  /** The key slots the current thread holds (a new thread is sent each key again). */
  private held = new Set<number>();
  private nextId = 0;
  private readonly waiting = new Map<number, Waiting>();
  /** Inputs asked for in this turn of the loop, sent together at its end. */
  private batch: { id: number; slot: number; input: string }[] = [];

  sign(key: SigningKey, payload: unknown, attempt: SignedAttempt): Promise<string> {
    let prepared = this.prepared.get(key.privateKey);
    if (!prepared) {
      prepared = {
        headerStart: JSON.stringify({ alg: 'ES256', kid: key.kid, typ: 'JWT' }).slice(0, -1),
        slot: this.keys.push(KeyObject.from(key.privateKey as webcrypto.CryptoKey)) - 1,
      };
      this.prepared.set(key.privateKey, prepared);
    }
    const header =
      `${prepared.headerStart},"webhook-id":${JSON.stringify(attempt.id)},` +
      `"webhook-timestamp":${attempt.timestamp},"webhook-app":${JSON.stringify(attempt.app)}}`;
    const input = `${Buffer.from(header).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    const id = this.nextId++;
    if (this.batch.length === 0) queueMicrotask(() => this.send());
    this.batch.push({ id, slot: prepared.slot, input });
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject, input }));
  }

  /** Ends the signing thread; signatures still waiting fail. */
  async close(): Promise<void> {
    await this.thread?.terminate();
  }

  /**
   * Sends this turn's inputs, after the keys the thread does not hold yet. One input while nothing waits for the
   * thread (an idle worker's delivery) is signed here instead (about 25 µs): the hop to the thread and back
   * would cost two wake-ups of an idle thread on the way to the receiver, more than the signature (decision
   * 0039). A burst's claimed batches still go to the thread.
   */
  private send(): void {
    const batch = this.batch;
    this.batch = [];
    if (batch.length === 1 && this.waiting.size === 1) {
      const [{ id, slot, input }] = batch;
      const waiting = this.waiting.get(id)!;
      this.waiting.delete(id);
      try {
        waiting.resolve(`${input}.${signInput(this.keys[slot], input)}`);
      } catch (error) {
        waiting.reject(new Error(`webhook signature failed: ${(error as Error).message}`));
      }
      return;
    }
    const thread = this.signingThread();
    const items: Item[] = [];
    for (const { slot } of batch) {
      if (this.held.has(slot)) continue;
      items.push({ slot, key: this.keys[slot] });
      this.held.add(slot);
    }
    items.push(...batch);
    if (this.waiting.size === batch.length) thread.ref(); // nothing else was waiting
    thread.postMessage(items);
  }

  private signingThread(): Worker {
    if (this.thread) return this.thread;
    // A small young generation: the thread keeps only keys, and each batch is garbage once answered (the
    // default sizes added 45 MiB to the worker's RSS in the burst; these, about 20). Out of memory, it exits.
    const thread = new Worker(SIGNING_THREAD, {
      eval: true,
      resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 64 },
    });
    thread.on('message', (answers: Answer[]) => {
      for (const answer of answers) {
        const waiting = this.waiting.get(answer.id);
        if (!waiting) continue;
        this.waiting.delete(answer.id);
        if ('signature' in answer) waiting.resolve(`${waiting.input}.${answer.signature}`);
        else waiting.reject(new Error(`webhook signature failed: ${answer.error}`));
      }
      if (this.waiting.size === 0) thread.unref();
    });
    const gone = (reason: string) => {
      if (this.thread !== thread) return;
      this.thread = undefined;
      this.held = new Set();
      const unsent = new Set(this.batch.map((item) => item.id)); // they go to the next thread
      for (const [id, waiting] of this.waiting) {
        if (unsent.has(id)) continue;
        this.waiting.delete(id);
        waiting.reject(new Error(`the webhook signing thread ${reason}`));
      }
    };
    thread.on('error', (error) => gone(`failed: ${error.message}`));
    thread.on('exit', (code) => gone(`exited (${code})`));
    // The thread keeps the process alive only while a signature waits (unref after the listeners: adding a
    // 'message' listener refs it again).
    thread.unref();
    this.thread = thread;
    return thread;
  }
}
