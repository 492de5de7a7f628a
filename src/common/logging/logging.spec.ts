import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { LOG_SERIALIZERS, REDACTED_PATHS } from './logging.js';

function sink(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, stream };
}

/** None of `values` appears in what was written. */
function expectNoneWritten(lines: string[], values: string[]): void {
  const output = lines.join('');
  for (const value of values) expect(output).not.toContain(value);
}

describe('log redaction', () => {
  it('never writes credentials', () => {
    const { lines, stream } = sink();
    const logger = pino({ redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, stream);
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
    expectNoneWritten(lines, [
      'eyJsecret',
      'session=abc',
      'k-123',
      'session=def',
      'hunter2',
      'assertion-jwt',
      'at-jwt',
    ]);
    const output = lines.join('');
    expect(output).not.toContain('"d":"private"');
    expect(output).toContain('[redacted]');
  });
});

describe('error fields', () => {
  it("write an error's own scalar fields (its causes folded in), never the objects hung on it", () => {
    const { lines, stream } = sink();
    const logger = pino({ serializers: LOG_SERIALIZERS }, stream);
    // What pg-pool emits when PostgreSQL ends an idle connection (57P01): the error carries the pg client.
    const client = new pg.Client({
      connectionString: 'postgres://wallet:s3cret-pass@db.internal:5432/wallet',
    });
    const error = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
      severity: 'FATAL',
      detail: 'Key (email)=(juana@example.com) already exists.',
      client,
      cause: Object.assign(new Error('socket closed'), {
        errno: -104,
        socket: { remoteAddress: '10.0.0.9' },
      }),
    });
    logger.warn({ queue: 'events', err: error }, 'queue connection error');

    const line = JSON.parse(lines.join('')) as { err: Record<string, unknown>; queue: string };
    expect(line.queue).toBe('events');
    expect(line.err).toMatchObject({
      type: 'Error',
      // pino folds the cause's message and stack into the error's own.
      message: 'terminating connection due to administrator command: socket closed',
      code: '57P01',
      severity: 'FATAL',
    });
    expect(line.err.stack).toContain('terminating connection');
    expect(Object.keys(line.err).sort()).toEqual(['code', 'message', 'severity', 'stack', 'type']);
    expectNoneWritten(lines, [
      'db.internal',
      's3cret-pass',
      'juana@example.com',
      '10.0.0.9',
      'processID',
      'secretKey',
    ]);
  });

  it('write only the fields that say what failed: not what the AWS SDK, PostgreSQL or body-parser hang on errors', () => {
    const { lines, stream } = sink();
    const logger = pino({ serializers: LOG_SERIALIZERS }, stream);
    // An S3 SignatureDoesNotMatch as the SDK throws it: the XML error body's fields copied onto the exception.
    const s3 = Object.assign(new Error('The request signature we calculated does not match'), {
      name: 'SignatureDoesNotMatch',
      $fault: 'client',
      Code: 'SignatureDoesNotMatch',
      RequestId: 'R3QU35T',
      AWSAccessKeyId: 'AKIAEXAMPLEKEYID',
      StringToSign: 'AWS4-HMAC-SHA256\n20261202T000000Z',
      SignatureProvided: 'deadbeef',
      CanonicalRequest: 'PUT\n/bucket/key\nx-amz-security-token:SESSIONTOKEN',
    });
    // PostgreSQL's invalid JSON input: `where` quotes it; body-parser's parse error carries the body.
    const pgJson = Object.assign(new Error('invalid input syntax for type json'), {
      code: '22P02',
      where: 'JSON data, line 1: {"taxId":"20-12345678-9"',
    });
    const parse = Object.assign(new Error('Unexpected token'), {
      status: 400,
      body: '{"firstName":"Juana"',
      type: 'entity.parse.failed',
    });
    for (const err of [s3, pgJson, parse]) logger.error({ err }, 'failed');

    const [first, second, third] = lines
      .join('')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { err: Record<string, unknown> }).err);
    expect(Object.keys(first).sort()).toEqual(['$fault', 'Code', 'RequestId', 'message', 'stack', 'type']);
    expect(Object.keys(second).sort()).toEqual(['code', 'message', 'stack', 'type']);
    expect(third).toMatchObject({ status: 400 });
    expectNoneWritten(lines, [
      'AKIAEXAMPLEKEYID',
      'AWS4-HMAC-SHA256',
      'deadbeef',
      'SESSIONTOKEN',
      '20-12345678-9',
      'Juana',
    ]);
  });

  it('leave a value that is not an error as it is', () => {
    const { lines, stream } = sink();
    const logger = pino({ serializers: LOG_SERIALIZERS }, stream);
    logger.warn({ err: 'a plain reason' }, 'failed');
    expect(JSON.parse(lines.join('')).err).toBe('a plain reason');
  });
});
