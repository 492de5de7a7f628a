import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP peer speaking the S3 object subset the document storage uses
 * (PutObject, GetObject, path-style), which verifies every request's AWS
 * Signature Version 4 with the secret it was given, as S3 does.
 */
export interface S3Peer {
  url: string;
  objects: Map<string, { body: Buffer; headers: http.IncomingHttpHeaders }>;
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

export async function startS3Peer(accessKeyId: string, secret: string): Promise<S3Peer> {
  const objects: S3Peer['objects'] = new Map();
  const requests: S3Peer['requests'] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = decodeURIComponent(new URL(request.url ?? '/', 'http://peer').pathname);
      const valid = signatureValid(request, body, accessKeyId, secret);
      requests.push({ method: request.method ?? '', path, signatureValid: valid });
      response.setHeader('Content-Type', 'application/xml');
      if (!valid) {
        response.statusCode = 403;
        return response.end(xmlError('SignatureDoesNotMatch'));
      }
      if (request.method === 'PUT') {
        objects.set(path, { body, headers: request.headers });
        response.setHeader('ETag', `"${createHash('md5').update(body).digest('hex')}"`);
        return response.end();
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
