import { Controller, Get, Inject, Optional } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { within } from '../async/within.js';
import { Public } from '../auth/auth.decorator.js';
import { ServiceUnavailableError } from '../errors/domain-errors.js';
import { QueueFactory } from '../queue/queue.factory.js';

interface CheckResult {
  status: 'up' | 'down';
  latencyMs?: number;
  message?: string;
}

async function timed(check: () => Promise<unknown>, timeoutMs = 2000): Promise<CheckResult> {
  const started = Date.now();
  const outcome = await within(timeoutMs, check);
  if ('value' in outcome) return { status: 'up', latencyMs: Date.now() - started };
  const message = 'error' in outcome ? outcome.error.message : `timed out after ${timeoutMs} ms`;
  return { status: 'down', message };
}

@ApiTags('Operations')
@Controller('health')
export class HealthController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Optional() @Inject(QueueFactory) private readonly queues?: QueueFactory,
  ) {}

  @Get('live')
  @Public()
  @ApiOperation({ summary: 'Liveness: the process answers' })
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
  @ApiOperation({ summary: 'Readiness: the database and the queue backend answer' })
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
  @ApiServiceUnavailableResponse({ description: 'A dependency is down' })
  async ready(): Promise<{ status: 'ok'; checks: Record<string, CheckResult> }> {
    const checks: Record<string, CheckResult> = {
      database: await timed(() => this.dataSource.query('SELECT 1')),
    };
    if (this.queues) {
      const queues = this.queues;
      checks[queues.backend === 'redis' ? 'redis' : 'queue'] = await timed(() => queues.ping());
    }
    if (Object.values(checks).some((check) => check.status === 'down')) {
      throw new ServiceUnavailableError('A dependency is not ready', { checks });
    }
    return { status: 'ok', checks };
  }
}
