import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import request from 'supertest';
import {
  DOCUMENT_STORAGE,
  type DocumentStorage,
} from '../src/modules/kyc/documents/document-storage.port.js';
import { accessToken, registerClient } from './support/auth.js';
import { binary, PNG, userBody } from './support/identity.js';
import { holdTransaction } from './support/database.js';
import { startS3Peer, type S3Peer } from './support/s3-server.js';
import { startTestApp, type TestApp } from './support/test-app.js';

describe('documents in an S3-compatible bucket (DOCUMENT_STORAGE=s3)', () => {
  let peer: S3Peer;
  let t: TestApp;
  let token: string;
  let userId: string;

  const s3Env = (secret: string) => ({
    DOCUMENT_STORAGE: 's3',
    S3_ENDPOINT: peer.url,
    S3_BUCKET: 'kyc-documents',
    S3_REGION: 'sa-east-1',
    S3_ACCESS_KEY_ID: 'AKIDWALLETTEST',
    S3_SECRET_ACCESS_KEY: secret,
    S3_KEY_PREFIX: 'wallet',
  });

  beforeAll(async () => {
    peer = await startS3Peer('AKIDWALLETTEST', 'the-right-secret');
    t = await startTestApp({ env: s3Env('the-right-secret') });
    token = await accessToken(t.http, await registerClient(t.app));
    userId = (
      await request(t.http).post('/v1/users').set('Authorization', `Bearer ${token}`).send(userBody())
    ).body.uuid as string;
  });
  afterAll(async () => {
    await t.close();
    await peer.close();
  });

  it('stores the bytes in the bucket with signed requests and serves them back', async () => {
    const upload = await request(t.http)
      .post(`/v1/users/${userId}/documents`)
      .set('Authorization', `Bearer ${token}`)
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');
    expect(upload.status).toBe(201);
    const [row] = (await t.dataSource.query('SELECT app_id, sha256 FROM documents WHERE id = $1', [
      upload.body.uuid,
    ])) as { app_id: string; sha256: string }[];
    const objectPath = `/kyc-documents/wallet/${row.app_id}/${upload.body.uuid}`;
    const stored = peer.objects.get(objectPath);
    expect(stored?.body.equals(PNG)).toBe(true);
    expect(stored?.headers['x-amz-server-side-encryption']).toBe('AES256');
    expect(row.sha256).toBe(createHash('sha256').update(PNG).digest('hex'));

    const download = await request(t.http)
      .get(`/v1/documents/${upload.body.uuid}/content`)
      .set('Authorization', `Bearer ${token}`)
      .buffer(true)
      .parse(binary);
    expect(download.status).toBe(200);
    expect(download.headers['content-length']).toBe(String(PNG.length));
    expect((download.body as Buffer).equals(PNG)).toBe(true);
    expect(
      peer.requests.filter((r) => r.path === objectPath).map((r) => [r.method, r.signatureValid]),
    ).toEqual([
      ['PUT', true],
      ['GET', true],
    ]);
  });

  it('reads the object as a stream: the answer of the bucket itself (decision 0074)', async () => {
    const upload = await request(t.http)
      .post(`/v1/users/${userId}/documents`)
      .set('Authorization', `Bearer ${token}`)
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');
    const [{ app_id: appId }] = (await t.dataSource.query('SELECT app_id FROM documents WHERE id = $1', [
      upload.body.uuid,
    ])) as { app_id: string }[];
    const read = await t.app.get<DocumentStorage>(DOCUMENT_STORAGE).get(`${appId}/${upload.body.uuid}`);
    expect(read).toBeInstanceOf(Readable);
    const chunks: Buffer[] = [];
    for await (const chunk of read) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(PNG)).toBe(true);
  });

  it('takes the bytes out of the bucket again when the document is not recorded (its owner deleted meanwhile)', async () => {
    const owner = (
      await request(t.http).post('/v1/users').set('Authorization', `Bearer ${token}`).send(userBody())
    ).body.uuid as string;
    const deleting = await holdTransaction(t.dataSource, [
      ['SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [owner]],
      ['UPDATE users SET deleted_at = now() WHERE id = $1', [owner]],
    ]);
    const sent = peer.requests.length;
    try {
      const upload = request(t.http)
        .post(`/v1/users/${owner}/documents`)
        .set('Authorization', `Bearer ${token}`)
        .field('documentType', 'DNI_FRONT')
        .attach('file', PNG, 'front.png')
        .then((response) => response);
      await deleting.untilWaiting(); // the bytes are in the bucket; the row waits for the owner
      await deleting.commit();
      expect((await upload).status).toBe(404);
    } finally {
      await deleting.release();
    }
    const calls = peer.requests.slice(sent).map((call) => [call.method, call.signatureValid]);
    expect(calls).toEqual([
      ['PUT', true],
      ['DELETE', true],
    ]);
    const path = peer.requests.at(-1)!.path;
    expect(peer.requests.at(-2)!.path).toBe(path);
    expect(peer.objects.has(path)).toBe(false);
  });

  it('writes nothing when the bucket refuses the upload (wrong credentials)', async () => {
    const wrong = await startTestApp({ env: s3Env('a-wrong-secret') });
    try {
      const wrongToken = await accessToken(wrong.http, await registerClient(wrong.app));
      const owner = (
        await request(wrong.http)
          .post('/v1/users')
          .set('Authorization', `Bearer ${wrongToken}`)
          .send(userBody())
      ).body.uuid as string;
      const before = peer.objects.size;
      const upload = await request(wrong.http)
        .post(`/v1/users/${owner}/documents`)
        .set('Authorization', `Bearer ${wrongToken}`)
        .field('documentType', 'DNI_FRONT')
        .attach('file', PNG, 'front.png');
      expect(upload.status).toBe(500);
      expect(upload.body).toEqual({
        name: 'InternalServerError',
        message: 'Internal server error',
        detail: { trackingId: upload.headers['x-request-id'] },
      });
      expect(peer.objects.size).toBe(before);
      expect(peer.requests.at(-1)).toMatchObject({ method: 'PUT', signatureValid: false });
      const [{ n }] = (await wrong.dataSource.query('SELECT count(*)::int AS n FROM documents')) as {
        n: number;
      }[];
      expect(n).toBe(0);
    } finally {
      await wrong.close();
    }
  });
});
