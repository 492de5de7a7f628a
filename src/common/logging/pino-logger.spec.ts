import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Writable } from 'node:stream';
import pino from 'pino';
import { LoggingModule, NestPinoLogger, PinoLogger } from './pino-logger.js';

function sink(): { lines: () => Record<string, unknown>[]; stream: Writable } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { lines, stream };
}

@Injectable()
class First {
  constructor(readonly logger: PinoLogger) {
    logger.setContext('First');
  }
}

@Injectable()
class Second {
  constructor(readonly logger: PinoLogger) {
    logger.setContext('Second');
  }
}

@Module({ providers: [First, Second] })
class FeatureModule {}

describe('PinoLogger and NestPinoLogger', () => {
  it('gives each injecting class its own context on one root logger', async () => {
    const { lines, stream } = sink();
    const root = pino({ level: 'debug', base: { role: 'test' } }, stream);
    const moduleRef = await Test.createTestingModule({
      imports: [LoggingModule.forRoot(root), FeatureModule],
    }).compile();
    const first = moduleRef.get(First);
    const second = moduleRef.get(Second);
    expect(first.logger).not.toBe(second.logger);
    expect(PinoLogger.root).toBe(root);

    first.logger.info({ transferId: 't-1' }, 'settled %s', 'now');
    second.logger.warn('plain message');
    first.logger.error({ err: new Error('boom') }, 'failed');
    first.logger.trace('below the level');

    const written = lines();
    expect(written).toHaveLength(3);
    expect(written[0]).toMatchObject({
      level: 30,
      role: 'test',
      context: 'First',
      transferId: 't-1',
      msg: 'settled now',
    });
    expect(written[1]).toMatchObject({ level: 40, context: 'Second', msg: 'plain message' });
    expect(written[2]).toMatchObject({ level: 50, context: 'First', msg: 'failed' });
    expect((written[2].err as { message: string; stack: string }).message).toBe('boom');
    expect((written[2].err as { stack: string }).stack).toContain('Error: boom');
    await moduleRef.close();
  });

  it("writes Nest's own log calls as pino lines, with context and errors", () => {
    const { lines, stream } = sink();
    const nest = new NestPinoLogger(pino({ level: 'info' }, stream));
    nest.log('Mapped {/v1/ping, GET} route', 'RouterExplorer');
    nest.error('Unhandled', 'Error: Unhandled\n    at handler (file.js:1:1)', 'ExceptionsHandler');
    nest.warn({ detail: 'object form' }, 'Ctx');
    nest.error(new Error('thrown'));
    nest.debug('below the level', 'Ctx');

    const written = lines();
    expect(written).toHaveLength(4);
    expect(written[0]).toMatchObject({
      level: 30,
      context: 'RouterExplorer',
      msg: 'Mapped {/v1/ping, GET} route',
    });
    expect(written[1]).toMatchObject({ level: 50, context: 'ExceptionsHandler' });
    expect((written[1].err as { message: string; stack: string }).stack).toContain('at handler');
    expect(written[2]).toMatchObject({ level: 40, context: 'Ctx', detail: 'object form' });
    expect((written[3].err as { message: string }).message).toBe('thrown');
  });
});
