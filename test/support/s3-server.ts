import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP peer speaking the S3 subset the document storage uses
 * (PutObject, GetObject, DeleteObject, ListObjectsV2; path-style), which
 * verifies every request's AWS Signature Version 4 with the secret it was
 * given, as S3 does.
 */
export interface S3Peer {
  url: string;
  /** By path (`/<bucket>/<key>`); a test may set `modifiedAt` back to make an object old. */
  objects: Map<string, { body: Buffer; headers: http.IncomingHttpHeaders; modifiedAt: Date }>;
  requests: { method: string; path: string; signatureValid: boolean }[];
  close(): Promise<void>;
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

function signatureValid(
  request: http.IncomingMessage,
  body: Buffer,
  accessKeyId: string,
  secret: string,
): boolean {
  const authorization = request.headers.authorization ?? '';
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      authorization,
    );
  if (!match) return false;
  const [, keyId, date, region, signedHeaders, signature] = match;
  if (keyId !== accessKeyId) return false;
  const amzDate = String(request.headers['x-amz-date'] ?? '');
  const payloadHash = String(request.headers['x-amz-content-sha256'] ?? '');
  if (payloadHash !== 'UNSIGNED-PAYLOAD' && payloadHash !== sha256(body)) return false;
  const url = new URL(request.url ?? '/', 'http://peer');
  const query = [...url.searchParams.entries()]
    .map(([k, v]) => [encodeURIComponent(k), encodeURIComponent(v)])
    .sort(([a, av], [b, bv]) => (a === b ? av.localeCompare(bv) : a.localeCompare(b)))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const headers = signedHeaders
    .split(';')
    .map(
      (name) =>
        `${name}:${String(request.headers[name] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}\n`,
    )
    .join('');
  const canonical = [request.method, url.pathname, query, headers, signedHeaders, payloadHash].join('\n');
  const scope = `${date}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), 's3'), 'aws4_request');
  return createHmac('sha256', key).update(toSign).digest('hex') === signature;
}

const xmlError = (code: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code></Error>`;

const xmlText = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * ListObjectsV2 of `bucket`: keys in byte order after the continuation token (the last key of the previous
 * page, as hex), at most `pageSize` a page (S3's is 1,000).
 */
function listObjects(
  objects: S3Peer['objects'],
  bucket: string,
  query: URLSearchParams,
  pageSize: number,
): string {
  const prefix = query.get('prefix') ?? '';
  const after = Buffer.from(query.get('continuation-token') ?? '', 'hex').toString('utf8');
  const keys = [...objects.keys()]
    .filter((path) => path.startsWith(`/${bucket}/`))
    .map((path) => path.slice(bucket.length + 2))
    .filter((key) => key.startsWith(prefix) && key > after)
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const page = keys.slice(0, Math.min(pageSize, Number(query.get('max-keys') ?? 1000)));
  const truncated = keys.length > page.length;
  const contents = page.map((key) => {
    const object = objects.get(`/${bucket}/${key}`)!;
    return `<Contents><Key>${xmlText(key)}</Key><LastModified>${object.modifiedAt.toISOString()}</LastModified><Size>${object.body.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
    `<Name>${xmlText(bucket)}</Name><Prefix>${xmlText(prefix)}</Prefix><KeyCount>${page.length}</KeyCount>`,
    `<MaxKeys>${pageSize}</MaxKeys><IsTruncated>${truncated}</IsTruncated>`,
    ...contents,
    truncated
      ? `<NextContinuationToken>${Buffer.from(page.at(-1)!).toString('hex')}</NextContinuationToken>`
      : '',
    '</ListBucketResult>',
  ].join('');
}

/** `listPageSize`: at most this many keys per ListObjectsV2 answer (small, to make a listing take pages). */
export async function startS3Peer(
  accessKeyId: string,
  secret: string,
  { listPageSize = 1000 }: { listPageSize?: number } = {},
): Promise<S3Peer> {
  const objects: S3Peer['objects'] = new Map();
  const requests: S3Peer['requests'] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = new URL(request.url ?? '/', 'http://peer');
      const path = decodeURIComponent(url.pathname);
      const valid = signatureValid(request, body, accessKeyId, secret);
      requests.push({ method: request.method ?? '', path, signatureValid: valid });
      response.setHeader('Content-Type', 'application/xml');
      if (!valid) {
        response.statusCode = 403;
        return response.end(xmlError('SignatureDoesNotMatch'));
      }
      if (request.method === 'PUT') {
        objects.set(path, { body, headers: request.headers, modifiedAt: new Date() });
        response.setHeader('ETag', `"${createHash('md5').update(body).digest('hex')}"`);
        return response.end();
      }
      if (request.method === 'GET' && url.searchParams.get('list-type') === '2') {
        return response.end(
          listObjects(objects, path.replace(/^\/|\/$/g, ''), url.searchParams, listPageSize),
        );
      }
      if (request.method === 'GET') {
        const object = objects.get(path);
        if (!object) {
          response.statusCode = 404;
          return response.end(xmlError('NoSuchKey'));
        }
        response.setHeader('Content-Type', 'application/octet-stream');
        response.setHeader('Content-Length', String(object.body.length));
        return response.end(object.body);
      }
      if (request.method === 'DELETE') {
        objects.delete(path); // S3 answers 204 whether or not the key was there
        response.statusCode = 204;
        return response.end();
      }
      response.statusCode = 405;
      response.end(xmlError('MethodNotAllowed'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    objects,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
