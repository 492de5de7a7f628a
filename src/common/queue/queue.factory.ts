import { Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import { PinoLogger } from '../logging/pino-logger.js';
import {
  createPostgresBackend,
  Queue,
  Worker,
  type IQueueBackend,
  type JobProgress,
  type JobsOptions,
  type PostgresConnectionOptions,
  type PostgresPoolConfig,
  type PostgresQueueBackend,
  type Processor,
  type WorkerOptions,
} from 'bullmq';
import { Redis } from 'ioredis';
import type { QueueName } from './queue-names.js';
import { RepeatThrottle } from '../logging/repeat-throttle.js';
import { GuardedPgClient } from '../database/guarded-pg-client.js';

/**
 * Which BullMQ backend this deployment uses: Redis (REDIS_URL, keys under `prefix`) or PostgreSQL (the
 * database itself, in schema `bullmq`).
 */
export type QueueConnection =
  { kind: 'redis'; url: string; prefix?: string } | { kind: 'postgres'; url: string };

export const QUEUE_CONNECTION = Symbol('QUEUE_CONNECTION');

/** The schema that holds BullMQ's PostgreSQL backend tables, apart from ours. */
export const BULLMQ_PG_SCHEMA = 'bullmq';

/**
 * The connection options of either backend. `any`: BullMQ uses this type parameter both ways (the options
 * given, the backend factory that takes them), so only `any` admits both backends' types.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyConnectionOptions = any;

/**
 * A producer on either backend. BullMQ types a queue by its backend (Redis by default, PostgreSQL with
 * createPostgresBackend); both are this type, which is what producers use.
 */
export type AppQueue = Queue<
  unknown,
  unknown,
  string,
  unknown,
  unknown,
  string,
  IQueueBackend,
  AnyConnectionOptions
>;

/** A consumer on either backend (see AppQueue). */
export type AppWorker<T = unknown, R = unknown> = Worker<
  T,
  R,
  string,
  IQueueBackend,
  JobProgress,
  AnyConnectionOptions
>;

/**
 * How long the stop waits on Redis while it is not connected before it gives up closing the consumers and the
 * queues gracefully (decision 0102): a graceful close sends QUIT, and lets the jobs in hand finish, through
 * connections that retry for ever, so a Redis that does not come back held the stop until the 25 s cut-off.
 */
export const REDIS_CLOSE_WAIT_MS = 3_000;
const REDIS_CHECK_MS = 100;

export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/**
 * The one factory for queues and workers, so that producers and processors
 * never know which backend runs underneath.
 */
@Injectable()
export class QueueFactory implements OnApplicationShutdown {
  private readonly queues = new Map<string, AppQueue>();
  /** What closing needs of a worker, whichever backend it runs on. */
  private readonly workers: {
    readonly name: string;
    close(): Promise<void>;
    waitUntilReady(): Promise<unknown>;
    closing: Promise<void> | undefined;
  }[] = [];
  /** The loops this factory started (PostgreSQL workers): closing waits for them to end. */
  private readonly loops: Promise<unknown>[] = [];
  private redis?: Redis;
  /** Called each time the shared Redis connection is ready again after a break (not on its first connect). */
  private readonly reconnectListeners = new Set<() => void>();
  private readonly workerConnections: Redis[] = [];

  constructor(
    @Inject(QUEUE_CONNECTION) readonly connection: QueueConnection,
    @Optional() private readonly logger?: PinoLogger,
  ) {}

  /** Repeated connection errors, logged once per queue and window (with how many were left out). */
  readonly errors = new RepeatThrottle();

  /** Connection trouble (Redis down, database restarting) goes to the log, not to stderr as raw traces. */
  private watch(
    emitter: { on(event: 'error', listener: (error: Error) => void): unknown },
    name: string,
  ): void {
    emitter.on('error', (error: Error) =>
      this.errors.report(`queue:${name}`, (fields) =>
        this.logger?.warn({ queue: name, err: error, ...fields }, 'queue connection error'),
      ),
    );
  }

  get backend(): QueueConnection['kind'] {
    return this.connection.kind;
  }

  /** Readiness of the queue backend: a round trip to Redis, or a query on the PostgreSQL backend. */
  async ping(): Promise<void> {
    if (this.connection.kind === 'redis') {
      await this.sharedRedis().ping();
      return;
    }
    await this.queue('maintenance').getJobCounts('wait');
  }

  /**
   * Calls `listener` each time the producers' Redis connection is ready again after it broke (a Redis restarted,
   * failed over): what was in Redis may be gone. Never on the PostgreSQL backend, whose queue tables are the
   * database's own. Returns the unsubscribe.
   */
  onReconnect(listener: () => void): () => void {
    if (this.connection.kind !== 'redis') return () => undefined;
    this.sharedRedis();
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** The producer side of a queue (one instance per name per process). */
  queue(name: QueueName): AppQueue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = this.connection.kind === 'redis' ? this.redisQueue(name) : this.postgresQueue(name);
      this.watch(queue, name);
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** A consumer. Call only from the worker side (the worker process, or the API in embedded mode). */
  worker<T = unknown, R = unknown>(
    name: QueueName,
    processor: Processor<T, R>,
    options: Omit<WorkerOptions, 'connection'> = {},
  ): AppWorker<T, R> {
    let worker: AppWorker<T, R>;
    if (this.connection.kind === 'redis') {
      // Workers block on their connection: each gets its own.
      const connection = new Redis(this.connection.url, { maxRetriesPerRequest: null });
      this.workerConnections.push(connection);
      worker = new Worker<T, R>(name, processor, { ...options, prefix: this.connection.prefix, connection });
    } else {
      // BullMQ's PostgreSQL worker names its dedicated LISTEN connection (`set_config('application_name')`)
      // while it becomes ready; started at once, its loop sends `LISTEN` on that same connection while the
      // naming query is still running, a query on a busy pg client (deprecated since pg 8.19, gone in pg 9).
      // Its loop starts here once it is ready, so the two queries go one after the other.
      const autorun = options.autorun ?? true;
      worker = new Worker<T, R, string, PostgresQueueBackend, JobProgress, PostgresConnectionOptions>(
        name,
        processor,
        { ...options, autorun: false, connection: this.pgConnection(true) },
        createPostgresBackend,
      );
      if (autorun) {
        const started = worker;
        const loop = started
          .waitUntilReady()
          .catch(() => undefined) // connection errors reach the 'error' event; the loop retries them
          // A worker closed while it was becoming ready (a stop right after start) must not start its loop.
          .then(() => (started.closing ? undefined : started.run()))
          .catch((error: unknown) => started.emit('error', error as Error));
        this.loops.push(loop);
      }
    }
    this.workers.push(worker);
    return worker;
  }

  async closeWorkers(): Promise<void> {
    const workers = this.workers.splice(0);
    // A worker still opening its connections when the stop comes would open them after close() and keep them
    // past the pool's end (errors when the database stops): let each finish opening first.
    // (PostgreSQL workers only, and for at most 5 s: a database that does not answer must not hold the stop.)
    await Promise.allSettled(
      workers
        .filter((worker) => this.connection.kind === 'postgres' && !worker.closing)
        .map((worker) =>
          Promise.race([
            worker.waitUntilReady(),
            new Promise((resolve) => setTimeout(resolve, 5_000).unref()),
          ]),
        ),
    );
    await this.closeUnlessRedisStaysAway('workers', workers);
    // close() does not wait for a loop that run() started by hand; its last query must end before the pool does.
    await Promise.allSettled(this.loops.splice(0));
    for (const connection of this.workerConnections.splice(0)) connection.disconnect();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.closeWorkers();
    await this.closeUnlessRedisStaysAway('queues', [...this.queues.values()]);
    this.queues.clear();
    // Forget the connection: a second disconnect() of an ended ioredis client arms a 2 s timer
    // that never clears (it waits for a 'close' already emitted) and holds the process open.
    this.reconnectListeners.clear();
    this.redis?.disconnect();
    this.redis = undefined;
  }

  /**
   * Closes `closables`; on Redis, waits no longer than Redis stays away REDIS_CLOSE_WAIT_MS in a row, then gives up
   * with one warn line naming them (the caller drops the connections). A close given up on leaves nothing behind
   * that matters: the process exits, its connections with it, and what the consumers had in hand is still in Redis
   * as an active job whose lock is no longer renewed; BullMQ's stalled-job check (of any worker, once Redis is
   * back) moves it back to wait and it runs again, as after a worker killed mid-job.
   */
  private async closeUnlessRedisStaysAway(
    what: 'workers' | 'queues',
    closables: readonly { readonly name: string; close(): Promise<void> }[],
  ): Promise<void> {
    if (closables.length === 0) return;
    const closing = Promise.allSettled(closables.map((closable) => closable.close()));
    if (this.connection.kind !== 'redis') {
      await closing;
      return;
    }
    let away = 0;
    let timer: NodeJS.Timeout | undefined;
    const givenUp = new Promise<false>((resolve) => {
      timer = setInterval(() => {
        away = this.redisConnected() ? 0 : away + REDIS_CHECK_MS;
        if (away >= REDIS_CLOSE_WAIT_MS) resolve(false);
      }, REDIS_CHECK_MS);
    });
    try {
      if (await Promise.race([closing.then(() => true), givenUp])) return;
    } finally {
      clearInterval(timer);
    }
    const { hostname, port } = new URL(this.connection.url);
    this.logger?.warn(
      {
        redis: `${hostname}:${port}`,
        [what]: closables.map((closable) => closable.name),
        waitedMs: REDIS_CLOSE_WAIT_MS,
      },
      'queue connections closed without Redis',
    );
  }

  /** Each Redis connection this factory opened is connected (none opened: nothing to wait for). */
  private redisConnected(): boolean {
    const connections = this.redis ? [this.redis, ...this.workerConnections] : this.workerConnections;
    return connections.every((connection) => connection.status === 'ready');
  }

  private redisQueue(name: QueueName): Queue {
    const prefix = this.connection.kind === 'redis' ? this.connection.prefix : undefined;
    return new Queue(name, {
      defaultJobOptions: DEFAULT_JOB_OPTIONS,
      prefix,
      connection: this.sharedRedis(),
    });
  }

  private postgresQueue(
    name: QueueName,
  ): Queue<
    unknown,
    unknown,
    string,
    unknown,
    unknown,
    string,
    PostgresQueueBackend,
    PostgresConnectionOptions
  > {
    return new Queue(
      name,
      { defaultJobOptions: DEFAULT_JOB_OPTIONS, connection: this.pgConnection(false) },
      createPostgresBackend,
    );
  }

  private sharedRedis(): Redis {
    if (this.connection.kind !== 'redis') throw new Error('not a Redis queue backend');
    if (!this.redis) {
      const redis = new Redis(this.connection.url, { maxRetriesPerRequest: null });
      // Its own listener from birth: before any queue shares it (the readiness ping opens it alone), ioredis wrote
      // each failed reconnect to stderr as a raw trace (decision 0100).
      this.watch(redis, 'shared');
      let connected = false;
      redis.on('ready', () => {
        if (connected) for (const listener of this.reconnectListeners) listener();
        connected = true;
      });
      this.redis = redis;
    }
    return this.redis;
  }

  private pgConnection(blocking: boolean): PostgresPoolConfig {
    return {
      connectionString: this.connection.url,
      schema: BULLMQ_PG_SCHEMA,
      migrate: true,
      max: blocking ? 4 : 3,
      application_name: blocking ? 'wallet-queue-worker' : 'wallet-queue',
      // Each pooled connection with an 'error' listener from birth (GuardedPgClient): a connection the server
      // ends while BullMQ holds it checked out (a terminated backend, a restart) was an unhandled 'error' event,
      // which ends the process. BullMQ's own LISTEN connection is a plain pg.Client it makes itself.
      Client: GuardedPgClient,
    };
  }
}
