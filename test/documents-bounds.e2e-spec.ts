import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import request from 'supertest';
import {
  DOCUMENT_STORAGE,
  type DocumentStorage,
} from '../src/modules/kyc/documents/document-storage.port.js';
import { accessToken, registerClient } from './support/auth.js';
import { binary, PNG, userBody } from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/webhook-receiver.js';

/** This process's open descriptors on `file`, each with its read position (Linux's /proc). */
function openOn(file: string): { fd: string; pos: number }[] {
  const found: { fd: string; pos: number }[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed meanwhile (the readdir's own descriptor among them)
    }
    if (target !== file) continue;
    const pos = /^pos:\s+(\d+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
    found.push({ fd, pos: Number(pos?.[1]) });
  }
  return found;
}

describe('document downloads and uploads, bounded (decision 0074)', () => {
  let t: TestApp;
  let token: string;
  let appId: string;
  let userId: string;
  let port: number;

  const auth = () => ({ Authorization: `Bearer ${token}` });
  const upload = (owner: string, bytes: Buffer) =>
    request(t.http)
      .post(`/v1/users/${owner}/documents`)
      .set(auth())
      .field('documentType', 'DNI_FRONT')
      .attach('file', bytes, 'front.png');

  beforeAll(async () => {
    // A still connection is dropped after 2 s here (HTTP_REQUEST_TIMEOUT_MS, 30 s by default).
    t = await startTestApp({
      env: {
        HTTP_HEADERS_TIMEOUT_MS: '1000',
        HTTP_REQUEST_TIMEOUT_MS: '2000',
        DOCUMENT_UPLOADS_PER_OWNER_PER_DAY: '3',
      },
    });
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
    port = (t.http.address() as AddressInfo).port;
    const client = await registerClient(t.app);
    appId = client.appId;
    token = await accessToken(t.http, client);
    userId = (await request(t.http).post('/v1/users').set(auth()).send(userBody())).body.uuid as string;
  });
  afterAll(() => t.close());

  describe('downloads', () => {
    it('reads the bytes from local disk as a stream and answers them unchanged, with the same headers', async () => {
      const uploaded = await upload(userId, PNG);
      expect(uploaded.status).toBe(201);
      const storage = t.app.get<DocumentStorage>(DOCUMENT_STORAGE);
      const read = await storage.get(`${appId}/${uploaded.body.uuid}`);
      expect(read).toBeInstanceOf(Readable);
      read.destroy();

      const download = await request(t.http)
        .get(`/v1/documents/${uploaded.body.uuid}/content`)
        .set(auth())
        .buffer(true)
        .parse(binary);
      expect(download.status).toBe(200);
      expect(download.headers).toMatchObject({
        'content-type': 'image/png',
        'content-length': String(PNG.length),
        'content-disposition': 'attachment; filename="front.png"',
      });
      expect((download.body as Buffer).equals(PNG)).toBe(true);
    });

    it('reads the file only as fast as the client takes it, and drops a client that stops reading', async () => {
      // A 64 MiB document: more than the kernel's socket buffers hold, so a client that reads nothing stalls it.
      const uploaded = await upload(userId, PNG);
      const file = path.join(t.dataDir, 'documents', appId, uploaded.body.uuid as string);
      const size = 64 * 1024 * 1024;
      const bytes = Buffer.concat([PNG, randomBytes(size - PNG.length)]);
      writeFileSync(file, bytes);
      await t.dataSource.query('UPDATE documents SET size = $2 WHERE id = $1', [uploaded.body.uuid, size]);

      const socket = net.connect(port, '127.0.0.1');
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const headers = new Promise<string>((resolve) => {
        socket.once('data', (chunk: Buffer) => {
          socket.pause(); // reads nothing more
          resolve(chunk.toString('latin1').split('\r\n\r\n')[0]);
        });
      });
      socket.write(
        `GET /v1/documents/${uploaded.body.uuid}/content HTTP/1.1\r\nHost: wallet.test\r\n` +
          `Authorization: Bearer ${token}\r\n\r\n`,
      );
      expect(await headers).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*content-length: 67108864/i);
      // The file is being read, and only so far: the rest waits for the client.
      const reading = openOn(file);
      expect(reading).toHaveLength(1);
      expect(reading[0].pos).toBeLessThan(size);

      // Still for HTTP_REQUEST_TIMEOUT_MS: the service drops the connection and closes the file. (A paused
      // client learns it only once it reads again.)
      await pollUntil('the file closed', () => openOn(file).length === 0, 20_000);
      expect(openOn(file)).toEqual([]);
      let received = 0;
      socket.on('data', (chunk: Buffer) => (received += chunk.length));
      socket.on('error', () => undefined); // a reset, if the kernel still held unsent bytes
      socket.resume();
      await closed;
      expect(received).toBeLessThan(size);
    });
  });

  describe('uploads', () => {
    /**
     * An upload's headers, announcing a 5 MB multipart body of which nothing is sent: the status and body of
     * the answer, which can come only from checks that did not wait for the body.
     */
    const headersOnly = (owner: string) =>
      new Promise<{ status: number; headers: string; body: unknown }>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk: Buffer) => {
          answer += chunk.toString('utf8');
          const [head, body] = answer.split('\r\n\r\n');
          const length = /content-length: (\d+)/i.exec(head ?? '');
          if (body === undefined || !length || Buffer.byteLength(body) < Number(length[1])) return;
          socket.destroy();
          resolve({ status: Number(head.split(' ')[1]), headers: head, body: JSON.parse(body) });
        });
        socket.on('error', reject);
        socket.on('close', () => reject(new Error(`closed before an answer: ${answer.split('\r\n')[0]}`)));
        socket.write(
          `POST /v1/users/${owner}/documents HTTP/1.1\r\nHost: wallet.test\r\nAuthorization: Bearer ${token}\r\n` +
            'Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 5000000\r\n\r\n',
        );
      });

    it('refuses an upload to an owner it cannot reach before reading its body, with the same 404', async () => {
      const unknown = '0b5e8c62-4a0e-4c57-9f59-6a1f3d1f2a10';
      const refused = await headersOnly(unknown);
      expect(refused.status).toBe(404);
      expect(refused.body).toEqual((await upload(unknown, PNG)).body);
    });

    it('refuses an upload past the daily limit before reading its body, with the same 429 and Retry-After', async () => {
      const owner = (await request(t.http).post('/v1/users').set(auth()).send(userBody())).body
        .uuid as string;
      for (let i = 0; i < 3; i++) expect((await upload(owner, PNG)).status).toBe(201);
      const full = await upload(owner, PNG);
      expect(full.status).toBe(429);
      const refused = await headersOnly(owner);
      expect(refused.status).toBe(429);
      expect(refused.headers).toMatch(/\r\nretry-after: \d+\r\n/i);
      expect(refused.body).toEqual(full.body);
      const [{ n }] = (await t.dataSource.query(
        'SELECT count(*)::int AS n FROM documents WHERE owner_id = $1',
        [owner],
      )) as { n: number }[];
      expect(n).toBe(3);
    });
  });
});
