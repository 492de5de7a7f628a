import { Writable } from 'node:stream';
import pino from 'pino';
import { REDACTED_PATHS } from './logging.js';

describe('log redaction', () => {
  it('never writes credentials', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = pino({ redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, sink);
    logger.info(
      {
        req: { headers: { authorization: 'Bearer eyJsecret', cookie: 'session=abc', 'x-api-key': 'k-123' } },
        res: { headers: { 'set-cookie': 'session=def' } },
        input: {
          password: 'hunter2',
          token: 'assertion-jwt',
          accessToken: 'at-jwt',
          privateJwk: { d: 'private' },
        },
      },
      'request',
    );
    const output = lines.join('');
    for (const secret of [
      'eyJsecret',
      'session=abc',
      'k-123',
      'session=def',
      'hunter2',
      'assertion-jwt',
      'at-jwt',
    ]) {
      expect(output).not.toContain(secret);
    }
    expect(output).not.toContain('"d":"private"');
    expect(output).toContain('[redacted]');
  });
});
