import { Controller, Get, Inject, Optional } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { within } from '../async/within.js';
import { Public } from '../auth/auth.decorator.js';
import { ServiceUnavailableError } from '../errors/domain-errors.js';
import { ServiceUnavailableResponse } from '../http/openapi.js';
import { PinoLogger } from '../logging/pino-logger.js';
import { RepeatThrottle } from '../logging/repeat-throttle.js';
import { QueueFactory } from '../queue/queue.factory.js';

interface CheckResult {
  status: 'up' | 'down';
  latencyMs?: number;
  message?: string;
}

const CHECK_TIMEOUT_MS = 2000;

/**
 * A readiness answer is given again for this long: the route is public, and each answer costs a database query and
 * a queue ping (decision 0073). A balancer's probe (every few seconds) still sees each change within a second.
 */
export const READY_CACHE_MS = 1000;

type Readiness = { status: 'ok'; checks: Record<string, CheckResult> };

/**
 * One dependency's check. The route is public: a failure answers what kind it was, never the error's text (a
 * driver's message names hosts, ports and database users), which goes to the log (once per 30 s per check).
 */
async function timed(
  name: string,
  check: () => Promise<unknown>,
  report: (name: string, error: Error) => void,
): Promise<CheckResult> {
  const started = Date.now();
  const outcome = await within(CHECK_TIMEOUT_MS, check);
  if ('value' in outcome) return { status: 'up', latencyMs: Date.now() - started };
  if (!('error' in outcome)) return { status: 'down', message: `timed out after ${CHECK_TIMEOUT_MS} ms` };
  report(name, outcome.error);
  return { status: 'down', message: 'failed (the reason is in the service log)' };
}

@ApiTags('Operations')
@Controller('health')
export class HealthController {
  private readonly failures = new RepeatThrottle();
  /** The last readiness check, and when it started: requests within READY_CACHE_MS of it share its answer. */
  private last?: { at: number; checks: Promise<Record<string, CheckResult>> };

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly logger: PinoLogger,
    @Optional() @Inject(QueueFactory) private readonly queues?: QueueFactory,
  ) {
    this.logger.setContext('Health');
  }

  private readonly report = (name: string, error: Error): void =>
    this.failures.report(name, (fields) =>
      this.logger.warn({ err: error, check: name, ...fields }, 'readiness check failed'),
    );

  @Get('live')
  @Public()
  @ApiOperation({ summary: 'Liveness: the process answers', operationId: 'getLiveness' })
  @ApiOkResponse({
    description: '{"status":"ok"}',
    schema: {
      type: 'object',
      properties: { status: { type: 'string', enum: ['ok'] } },
      required: ['status'],
    },
  })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @Public()
  @ApiOperation({
    summary: 'Readiness: the database and the queue backend answer',
    operationId: 'getReadiness',
  })
  @ApiOkResponse({
    description: '{"status":"ok","checks":{…}}',
    schema: {
      type: 'object',
      properties: {
        status: { type: 'string', enum: ['ok'] },
        checks: {
          type: 'object',
          description: 'one entry per dependency (database, and queue or redis)',
          additionalProperties: {
            type: 'object',
            properties: {
              status: { type: 'string', enum: ['up', 'down'] },
              latencyMs: { type: 'number' },
              message: { type: 'string' },
            },
            required: ['status'],
          },
        },
      },
      required: ['status', 'checks'],
    },
  })
  @ServiceUnavailableResponse(
    "A dependency is down: ServiceUnavailableError, detail.checks as in the 200 answer (a failed check's message " +
      'says only how it failed)',
  )
  async ready(): Promise<Readiness> {
    const now = Date.now();
    if (!this.last || now - this.last.at >= READY_CACHE_MS) this.last = { at: now, checks: this.check() };
    const checks = await this.last.checks;
    if (Object.values(checks).some((check) => check.status === 'down')) {
      // Retry-After as every 503 sends it (the OpenAPI document says so): the answer is checked again after it.
      throw new ServiceUnavailableError(
        'A dependency is not ready',
        { checks },
        Math.ceil(READY_CACHE_MS / 1000),
      );
    }
    return { status: 'ok', checks };
  }

  private async check(): Promise<Record<string, CheckResult>> {
    const checks: Record<string, CheckResult> = {
      database: await timed('database', () => this.dataSource.query('SELECT 1'), this.report),
    };
    if (this.queues) {
      const queues = this.queues;
      const name = queues.backend === 'redis' ? 'redis' : 'queue';
      checks[name] = await timed(name, () => queues.ping(), this.report);
    }
    return checks;
  }
}
