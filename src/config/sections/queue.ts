import type { EnvReaders } from '../env-readers.js';

/** BullMQ: on Redis, or on its PostgreSQL backend. */
export interface QueueConfig {
  /** Unset: BullMQ on its PostgreSQL backend. */
  readonly redisUrl: string | undefined;
  /** Key prefix of every queue (several deployments or test runs can share one Redis). */
  readonly queuePrefix: string;
}

export function loadQueueConfig({ str, url, problems }: EnvReaders): QueueConfig {
  const redisUrl = url('REDIS_URL', ['redis:', 'rediss:']);
  const queuePrefix = str('QUEUE_PREFIX') ?? 'wallet';
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(queuePrefix))
    problems.push('QUEUE_PREFIX must be 1-40 of A-Z a-z 0-9 _ -');
  return { redisUrl, queuePrefix };
}
