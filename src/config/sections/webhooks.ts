import { parseDuration, type EnvReaders } from '../env-readers.js';

/** The longest retry delay: a week (a delay is recorded in milliseconds as a PostgreSQL int; decision 0096). */
const MAX_RETRY_DELAY_MS = 7 * 24 * 3_600_000;

/** Webhook delivery: which URLs, the retry schedule, timeouts and the sweeper. */
export interface WebhooksConfig {
  readonly webhookAllowPrivateUrls: boolean;
  readonly webhookRetryDelaysMs: readonly number[];
  /** Timeout of one delivery attempt. */
  readonly webhookTimeoutMs: number;
  /** How often the worker looks for events the queue lost (Redis flushed, relay down). */
  readonly webhookSweepIntervalMs: number;
  /** Events (the feed, GET /v1/events) are kept at least this many days once no longer pending. */
  readonly eventsRetentionDays: number;
}

export function loadWebhooksConfig({ str, int, bool, problems }: EnvReaders): WebhooksConfig {
  const delaysRaw = str('WEBHOOK_RETRY_DELAYS') ?? '5s,5m,30m,2h,5h,10h,14h,20h,24h';
  const delays = delaysRaw.split(',').map((part) => parseDuration(part));
  if (delays.some((d) => d === undefined) || delays.length === 0) {
    problems.push(
      `WEBHOOK_RETRY_DELAYS must be a comma-separated list such as 5s,5m,2h (got "${delaysRaw}")`,
    );
  } else if (delays.some((d) => d! > MAX_RETRY_DELAY_MS)) {
    // A delay is recorded in milliseconds as a PostgreSQL int (webhook_record): 23 days and more, with the jitter,
    // overflowed it and failed the recording of the whole batch, acknowledged events included (decision 0096).
    problems.push(`WEBHOOK_RETRY_DELAYS must not hold a delay over 7d (got "${delaysRaw}")`);
  }
  return {
    webhookAllowPrivateUrls: bool('WEBHOOK_ALLOW_PRIVATE_URLS', false),
    webhookRetryDelaysMs: delays.filter((d): d is number => d !== undefined),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    webhookSweepIntervalMs: int('WEBHOOK_SWEEP_INTERVAL_MS', 5_000, 50, 600_000),
    eventsRetentionDays: int('EVENTS_RETENTION_DAYS', 30, 1, 36_500),
  };
}
