import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';

/** What the primary hands each API process: where the database is, and whether it hosts the consumers. */
export interface ApiProcessRuntime {
  readonly databaseUrl: string;
  /** Host the queue consumers (embedded database only: one of the N processes does, decision 0033). */
  readonly runConsumers: boolean;
  /** Which of the N places this process fills (0 … N-1); a replacement takes the place of the one it replaces. */
  readonly slot: number;
}

interface RuntimeRequest {
  type: 'wallet-runtime?';
}
interface RuntimeAnswer {
  type: 'wallet-runtime';
  runtime: ApiProcessRuntime;
}

/** A replacement that dies sooner than this after its start waits this long before the next one. */
const RESTART_BACKOFF_MS = 1_000;

export interface SupervisorOptions {
  /** The entry point the API processes run (this same file). */
  exec: string;
  count: number;
  port: number;
  databaseUrl: string;
  /** The consumers run in the API (embedded database): slot 0 hosts them. */
  consumersInApi: boolean;
  logger: Logger;
}

/**
 * The primary of `API_PROCESSES=N` (node:cluster): it did the one-time start (config, database, migrations),
 * forks N API processes that listen on the same port (the primary hands out connections), replaces one that
 * dies, and stops them all on `stop()`. Resolves once all N listen; rejects when one of the first N dies
 * before listening (a bad port, a broken build), after stopping the others.
 */
export class ApiSupervisor {
  private readonly slots = new Map<number, Worker>();
  private stopping = false;

  constructor(private readonly options: SupervisorOptions) {}

  start(): Promise<void> {
    cluster.setupPrimary({ exec: this.options.exec, args: [] });
    return new Promise((resolve, reject) => {
      let listening = 0;
      let started = false;
      for (let slot = 0; slot < this.options.count; slot++) {
        this.fork(slot, {
          onListening: () => {
            if (started) return;
            listening += 1;
            if (listening === this.options.count) {
              started = true;
              resolve();
            }
          },
          onEarlyDeath: (reason) => {
            if (started) return false;
            started = true;
            void this.stop().then(() => reject(new Error(reason)));
            return true;
          },
        });
      }
    });
  }

  /** Sends SIGTERM to every API process (each closes gracefully) and waits until all exited. */
  async stop(): Promise<void> {
    this.stopping = true;
    const exits = [...this.slots.values()].map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.isDead()) return resolve();
          worker.once('exit', () => resolve());
          worker.process.kill('SIGTERM');
        }),
    );
    await Promise.all(exits);
  }

  private fork(
    slot: number,
    hooks: { onListening: () => void; onEarlyDeath: (reason: string) => boolean },
  ): void {
    const startedAt = Date.now();
    let listened = false;
    const worker = cluster.fork();
    this.slots.set(slot, worker);
    worker.on('message', (message: RuntimeRequest) => {
      if (message?.type !== 'wallet-runtime?') return;
      const runtime: ApiProcessRuntime = {
        databaseUrl: this.options.databaseUrl,
        runConsumers: this.options.consumersInApi && slot === 0,
        slot,
      };
      worker.send({ type: 'wallet-runtime', runtime } satisfies RuntimeAnswer);
    });
    worker.on('listening', () => {
      listened = true;
      hooks.onListening();
    });
    worker.on('exit', (code, signal) => {
      if (this.slots.get(slot) === worker) this.slots.delete(slot);
      if (this.stopping) return;
      if (!listened && hooks.onEarlyDeath(`API process ${slot} exited before listening (code ${code})`))
        return;
      this.options.logger.warn(
        { slot, pid: worker.process.pid, code, signal },
        'API process exited: starting another',
      );
      const delay = Date.now() - startedAt < RESTART_BACKOFF_MS ? RESTART_BACKOFF_MS : 0;
      setTimeout(() => {
        if (!this.stopping) this.fork(slot, { onListening: () => undefined, onEarlyDeath: () => false });
      }, delay);
    });
  }
}

/** In an API process forked by ApiSupervisor: asks the primary for its runtime and waits for it. */
export function receiveRuntime(): Promise<ApiProcessRuntime> {
  return new Promise((resolve) => {
    const listener = (message: RuntimeAnswer) => {
      if (message?.type !== 'wallet-runtime') return;
      process.off('message', listener);
      resolve(message.runtime);
    };
    process.on('message', listener);
    process.send?.({ type: 'wallet-runtime?' } satisfies RuntimeRequest);
  });
}

export const isApiProcessOfCluster = (): boolean => cluster.isWorker;
