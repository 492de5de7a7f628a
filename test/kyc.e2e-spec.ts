import { createHash, randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { PinoLogger } from '../src/common/logging/pino-logger.js';
import { KycVerificationService } from '../src/modules/kyc/sessions/kyc-verification.service.js';
import { JOBS, QUEUES } from '../src/common/queue/queue-names.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { accessToken, registerClient, subjectToken, type TestClient } from './support/auth.js';
import { companyBody, userBody } from './support/identity.js';
import { holdTransaction } from './support/database.js';
import { pollFor, pollUntil } from './support/poll.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

/** The validation items of a 400, as path and type. */
const expectFields = (body: { detail?: { items?: { path: string; type: string }[] } }) =>
  (body.detail?.items ?? []).map(({ path, type }) => ({ path, type }));

describe('KYC documents and sessions', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;
  let userId: string;
  let otherUserId: string;

  const auth = (value = token) => ({ Authorization: `Bearer ${value}` });
  const createUser = async () => {
    const response = await request(t.http).post('/v1/users').set(auth()).send(userBody());
    expect(response.status).toBe(201);
    return response.body.uuid as string;
  };
  const upload = (
    owner: string,
    bytes: Buffer,
    filename: string,
    fields: Record<string, string> = {},
    as = token,
  ) => {
    const call = request(t.http).post(`/v1/users/${owner}/documents`).set(auth(as));
    for (const [key, value] of Object.entries({ documentType: 'DNI_FRONT', ...fields }))
      call.field(key, value);
    return call.attach('file', bytes, filename);
  };

  beforeAll(async () => {
    t = await startTestApp({ runWorker: true, env: { KYC_SIM_DELAY_MS: '50', DOCUMENT_MAX_BYTES: '4096' } });
    client = await registerClient(t.app);
    token = await accessToken(t.http, client);
    userId = await createUser();
    otherUserId = await createUser();
  });
  afterAll(() => t.close());

  describe('documents', () => {
    it('stores an upload, with the type detected from the bytes and its SHA-256', async () => {
      const response = await upload(userId, PNG, 'front.png', { name: 'DNI frente' });
      expect(response.status).toBe(201);
      expect(response.body).toEqual({
        uuid: expect.any(String),
        name: 'DNI frente',
        type: 'DNI_FRONT',
        contentType: 'image/png',
        url: expect.stringMatching(new RegExp(`documents/${response.body.uuid}/content$`)),
        created: expect.any(String),
      });
      const [row] = (await t.dataSource.query('SELECT sha256, size FROM documents WHERE id = $1', [
        response.body.uuid,
      ])) as { sha256: string; size: number }[];
      expect(row).toEqual({ sha256: createHash('sha256').update(PNG).digest('hex'), size: PNG.length });
      const download = await request(t.http)
        .get(`/v1/documents/${response.body.uuid}/content`)
        .set(auth())
        .buffer(true)
        .parse((res, done) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => done(null, Buffer.concat(chunks)));
        });
      expect(download.status).toBe(200);
      expect(download.headers['content-type']).toBe('image/png');
      expect(Buffer.compare(download.body as Buffer, PNG)).toBe(0);
      const meta = await request(t.http).get(`/v1/documents/${response.body.uuid}`).set(auth());
      expect(meta.body).toEqual(response.body);
    });

    it('trusts the bytes, not the file name', async () => {
      const pdf = await upload(userId, PDF, 'looks-like.png');
      expect(pdf.status).toBe(201);
      expect(pdf.body.contentType).toBe('application/pdf');
      const text = await upload(userId, Buffer.from('just some text, not an image'), 'photo.png');
      expect(text.status).toBe(400);
      expect(text.body.detail.items).toEqual([
        { path: 'file', message: expect.any(String), type: 'invalid' },
      ]);
    });

    it('keeps a file name as the client wrote it: UTF-8, cut at 200 code points, never inside a character', async () => {
      const accented = await upload(userId, PNG, 'DNI_Pérez_Ñandú.png');
      expect(accented.status).toBe(201);
      expect(accented.body.name).toBe('DNI_Pérez_Ñandú.png');
      const [row] = (await t.dataSource.query('SELECT name FROM documents WHERE id = $1', [
        accented.body.uuid,
      ])) as { name: string }[];
      expect(row.name).toBe('DNI_Pérez_Ñandú.png');

      const emojiLast = `${'x'.repeat(199)}😀`; // 200 code points, 201 UTF-16 units
      const named = await upload(userId, PNG, 'a.png', { name: emojiLast });
      expect(named.status).toBe(201);
      expect(named.body.name).toBe(emojiLast);
      const longFile = await upload(userId, PNG, `${'y'.repeat(199)}😀😀.png`);
      expect(longFile.status).toBe(201);
      expect(longFile.body.name).toBe(`${'y'.repeat(199)}😀`);
      expect((await request(t.http).get(`/v1/documents/${longFile.body.uuid}`).set(auth())).body.name).toBe(
        `${'y'.repeat(199)}😀`,
      );
    });

    it('refuses a file over DOCUMENT_MAX_BYTES with 413', async () => {
      const big = Buffer.concat([PNG, Buffer.alloc(5000)]);
      const response = await upload(userId, big, 'big.png');
      expect(response.status).toBe(413);
      expect(response.body.name).toBe('PayloadTooLargeError');
    });

    it('validates the form fields', async () => {
      const noType = await request(t.http)
        .post(`/v1/users/${userId}/documents`)
        .set(auth())
        .attach('file', PNG, 'a.png');
      expect(noType.status).toBe(400);
      expect(noType.body.detail.items).toContainEqual({
        path: 'documentType',
        message: expect.any(String),
        type: 'required',
      });
      const noFile = await request(t.http)
        .post(`/v1/users/${userId}/documents`)
        .set(auth())
        .field('documentType', 'X');
      expect(noFile.status).toBe(400);
      expect(noFile.body.detail.items).toEqual([
        { path: 'file', message: expect.any(String), type: 'required' },
      ]);
      const extra = await upload(userId, PNG, 'a.png', { owner: 'someone' });
      expect(extra.status).toBe(400);
      expect(extra.body.detail.items).toContainEqual({
        path: 'owner',
        message: expect.any(String),
        type: 'invalid',
      });
    });

    it('lists the documents of an owner, and only to those who reach the owner', async () => {
      const list = await request(t.http).get(`/v1/users/${userId}/documents`).set(auth());
      expect(list.status).toBe(200);
      expect(list.body.length).toBeGreaterThanOrEqual(2);
      const own = await subjectToken(client, userId);
      expect((await request(t.http).get(`/v1/users/${userId}/documents`).set(auth(own))).status).toBe(200);
      const stranger = await subjectToken(client, otherUserId);
      expect((await request(t.http).get(`/v1/users/${userId}/documents`).set(auth(stranger))).status).toBe(
        404,
      );
      expect(
        (await request(t.http).get(`/v1/documents/${list.body[0].uuid}`).set(auth(stranger))).status,
      ).toBe(404);
      const otherApp = await registerClient(t.app, 'other');
      const otherToken = await accessToken(t.http, otherApp);
      expect(
        (await request(t.http).get(`/v1/documents/${list.body[0].uuid}`).set(auth(otherToken))).status,
      ).toBe(404);
      expect((await upload(userId, PNG, 'a.png', {}, otherToken)).status).toBe(404);
    });
  });

  describe('sessions', () => {
    const uploadNamed = async (owner: string, name: string) =>
      (await upload(owner, PNG, 'x.png', { name })).body.uuid as string;
    const submit = (session: string, step: string, documentUuid?: string, as = token) =>
      request(t.http)
        .post(`/v1/kyc/sessions/${session}/steps/${step}`)
        .set(auth(as))
        .send(documentUuid ? { documentUuid } : {});
    const session = async (id: string) =>
      (await request(t.http).get(`/v1/kyc/sessions/${id}`).set(auth())).body;
    /** A new session of the user `owner` (the suite's user unless told): its id. */
    const newSession = async (owner = userId) =>
      (await request(t.http).post('/v1/kyc/sessions').set(auth()).send({ ownerType: 'USER', ownerId: owner }))
        .body.uuid as string;
    const stepStatus = async (id: string, step: string) =>
      ((await session(id)).steps as { step: string; status: string }[]).find((s) => s.step === step)!.status;

    it('runs a session to APPROVED, each completed step emitting kyc_steep_update through the outbox', async () => {
      const started = await request(t.http)
        .post('/v1/kyc/sessions')
        .set(auth())
        .send({ ownerType: 'USER', ownerId: userId });
      expect(started.status).toBe(201);
      expect(started.body.status).toBe('PENDING');
      expect(started.body.steps.map((s: { step: string; status: string }) => [s.step, s.status])).toEqual([
        ['DOCUMENT_FRONT', 'PENDING'],
        ['DOCUMENT_BACK', 'PENDING'],
        ['SELFIE', 'PENDING'],
        ['GOVERNMENTAL_CHECK_SELFIE', 'PENDING'],
      ]);
      const id = started.body.uuid as string;
      const early = await submit(id, 'GOVERNMENTAL_CHECK_SELFIE');
      expect(early.status).toBe(403);
      expect(early.body.detail).toEqual({ reason: 'INVALID_STATE' });

      const front = await submit(id, 'DOCUMENT_FRONT', await uploadNamed(userId, 'front'));
      expect(front.status).toBe(202);
      expect(front.body.status).toBe('IN_PROGRESS');
      await pollUntil(
        'the front step to succeed',
        async () => (await stepStatus(id, 'DOCUMENT_FRONT')) === 'SUCCESS',
      );
      expect((await submit(id, 'DOCUMENT_FRONT', await uploadNamed(userId, 'again'))).status).toBe(403);

      expect((await submit(id, 'DOCUMENT_BACK', await uploadNamed(userId, 'back'))).status).toBe(202);
      expect((await submit(id, 'SELFIE', await uploadNamed(userId, 'selfie'))).status).toBe(202);
      expect((await submit(id, 'GOVERNMENTAL_CHECK_SELFIE')).status).toBe(202);
      const done = await pollFor('the session to be approved', async () => {
        const current = await session(id);
        return current.status === 'APPROVED' ? current : undefined;
      });
      expect(done.steps.every((s: { status: string }) => s.status === 'SUCCESS')).toBe(true);

      const events = (await t.dataSource.query(
        `SELECT event, subject, payload FROM webhook_events WHERE subject = $1 ORDER BY seq`,
        [id],
      )) as {
        event: string;
        subject: string;
        payload: { event: string; timestamp: number; data: unknown };
      }[];
      expect(events.map((e) => e.event)).toEqual(Array(4).fill('kyc_steep_update'));
      // One event per step; steps submitted moments apart complete in whichever order the simulator's jobs run.
      expect(events.map((e) => e.payload.data)).toEqual(
        expect.arrayContaining([
          { session: id, steep: 'DOCUMENT_FRONT', backStatus: 'PENDING', newStatus: 'SUCCESS' },
          { session: id, steep: 'DOCUMENT_BACK', backStatus: 'PENDING', newStatus: 'SUCCESS' },
          { session: id, steep: 'SELFIE', backStatus: 'PENDING', newStatus: 'SUCCESS' },
          { session: id, steep: 'GOVERNMENTAL_CHECK_SELFIE', backStatus: 'PENDING', newStatus: 'SUCCESS' },
        ]),
      );
      expect(events[0].payload.event).toBe('kyc_steep_update');
      expect(Number.isInteger(events[0].payload.timestamp)).toBe(true);
    });

    it('rejects the session when the simulator fails a step (documents named FAIL…)', async () => {
      const id = await newSession();
      expect(
        (await submit(id, 'DOCUMENT_FRONT', await uploadNamed(userId, 'FAIL blurry photo'))).status,
      ).toBe(202);
      const rejected = await pollFor('the session to be rejected', async () => {
        const current = await session(id);
        return current.status === 'REJECTED' ? current : undefined;
      });
      expect(rejected.steps[0]).toMatchObject({
        step: 'DOCUMENT_FRONT',
        status: 'FAILED',
        failureReason: expect.any(String),
      });
      const [event] = (await t.dataSource.query(`SELECT payload FROM webhook_events WHERE subject = $1`, [
        id,
      ])) as {
        payload: { data: Record<string, string> };
      }[];
      expect(event.payload.data).toEqual({
        session: id,
        steep: 'DOCUMENT_FRONT',
        backStatus: 'PENDING',
        newStatus: 'FAILED',
      });
      const after = await submit(id, 'DOCUMENT_BACK', await uploadNamed(userId, 'back'));
      expect(after.status).toBe(403);
    });

    it('refuses bad submissions', async () => {
      const id = await newSession();
      const badStep = await submit(id, 'FINGERPRINT', await uploadNamed(userId, 'x'));
      expect(badStep.status).toBe(400);
      expect(badStep.body.detail.items[0]).toMatchObject({ path: 'step', type: 'invalid' });
      const noDocument = await submit(id, 'DOCUMENT_FRONT');
      expect(noDocument.body.detail.items[0]).toMatchObject({ path: 'documentUuid', type: 'required' });
      const strangersDocument = await submit(id, 'DOCUMENT_FRONT', await uploadNamed(otherUserId, 'theirs'));
      expect(strangersDocument.status).toBe(400);
      expect(strangersDocument.body.detail.items[0]).toMatchObject({
        path: 'documentUuid',
        type: 'notfound',
      });
      const unknownOwner = await request(t.http)
        .post('/v1/kyc/sessions')
        .set(auth())
        .send({ ownerType: 'USER', ownerId: randomUUID() });
      expect(unknownOwner.status).toBe(400);
      expect(unknownOwner.body.detail.items[0]).toMatchObject({ path: 'ownerId', type: 'notfound' });
    });

    it('scopes sessions to the application and to the subject', async () => {
      const id = await newSession();
      const own = await subjectToken(client, userId);
      expect((await request(t.http).get(`/v1/kyc/sessions/${id}`).set(auth(own))).status).toBe(200);
      const stranger = await subjectToken(client, otherUserId);
      expect((await request(t.http).get(`/v1/kyc/sessions/${id}`).set(auth(stranger))).status).toBe(404);
      expect(
        (
          await request(t.http)
            .post('/v1/kyc/sessions')
            .set(auth(stranger))
            .send({ ownerType: 'USER', ownerId: userId })
        ).status,
      ).toBe(400);
      const otherApp = await registerClient(t.app, 'elsewhere');
      const otherToken = await accessToken(t.http, otherApp);
      expect((await request(t.http).get(`/v1/kyc/sessions/${id}`).set(auth(otherToken))).status).toBe(404);
    });

    it("a deleted owner's sessions are 404, and no step can be submitted to them", async () => {
      const owner = await createUser();
      const selfie = await uploadNamed(owner, 'selfie');
      const id = await newSession(owner);
      expect((await request(t.http).delete(`/v1/users/${owner}`).set(auth())).status).toBe(204);
      for (const as of [token, await subjectToken(client, owner)]) {
        const read = await request(t.http).get(`/v1/kyc/sessions/${id}`).set(auth(as));
        expect({ status: read.status, body: read.body as unknown }).toEqual({
          status: 404,
          body: { name: 'NotFoundError', message: 'KYC session not found', detail: { item: id } },
        });
        expect((await submit(id, 'SELFIE', selfie, as)).status).toBe(404);
      }
      const [row] = (await t.dataSource.query(
        `SELECT count(*)::int AS submitted FROM kyc_session_steps WHERE session_id = $1 AND submitted_at IS NOT NULL`,
        [id],
      )) as { submitted: number }[];
      expect(row.submitted).toBe(0);
    });
  });

  it('a session or a document asked for while the owner is being deleted waits for the deletion, then gets nothing', async () => {
    const owner = await createUser();
    // What DELETE /users/{uuid} does (the owner row locked, then soft-deleted), held open.
    const deleting = await holdTransaction(t.dataSource, [
      ['SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [owner]],
      ['UPDATE users SET deleted_at = now() WHERE id = $1', [owner]],
    ]);
    try {
      const session = request(t.http)
        .post('/v1/kyc/sessions')
        .set(auth())
        .send({ ownerType: 'USER', ownerId: owner })
        .then((response) => response);
      await deleting.untilWaiting();
      const document = upload(owner, PNG, 'late.png').then((response) => response);
      await deleting.commit();
      expect(expectFields((await session).body)).toEqual([{ path: 'ownerId', type: 'notfound' }]);
      expect((await document).status).toBe(404);
    } finally {
      await deleting.release();
    }
    const [rows] = (await t.dataSource.query(
      `SELECT (SELECT count(*)::int FROM kyc_sessions WHERE owner_id = $1) AS sessions,
              (SELECT count(*)::int FROM documents WHERE owner_id = $1) AS documents`,
      [owner],
    )) as { sessions: number; documents: number }[];
    expect(rows).toEqual({ sessions: 0, documents: 0 });
    // The bytes stored before the row waited are gone with it: every file of the application has its row.
    const folder = path.join(t.dataDir, 'documents', client.appId);
    const [{ n }] = (await t.dataSource.query('SELECT count(*)::int AS n FROM documents WHERE app_id = $1', [
      client.appId,
    ])) as { n: number }[];
    expect(readdirSync(folder).filter((name) => !name.endsWith('.tmp'))).toHaveLength(n);
  });

  it('takes a user token whose application id and sub are signed in upper case (an upload answered 500)', async () => {
    const upper = await subjectToken(client, userId.toUpperCase(), {
      claims: { iss: client.appId.toUpperCase() },
    });
    const response = await upload(userId, PNG, 'upper.png', {}, upper);
    expect(response.status).toBe(201);
    const [row] = (await t.dataSource.query('SELECT app_id, storage_key FROM documents WHERE id = $1', [
      response.body.uuid,
    ])) as { app_id: string; storage_key: string }[];
    expect(row).toEqual({ app_id: client.appId, storage_key: `${client.appId}/${response.body.uuid}` });
  });
});

describe('KYC document uploads per owner and day', () => {
  let t: TestApp;
  let token: string;
  let client: TestClient;

  beforeAll(async () => {
    t = await startTestApp({ env: { DOCUMENT_UPLOADS_PER_OWNER_PER_DAY: '2' } });
    client = await registerClient(t.app);
    token = await accessToken(t.http, client);
  });
  afterAll(() => t.close());

  const createUser = async () => {
    const response = await request(t.http)
      .post('/v1/users')
      .set('Authorization', `Bearer ${token}`)
      .send(userBody());
    expect(response.status).toBe(201);
    return response.body.uuid as string;
  };
  const upload = (owner: string) =>
    request(t.http)
      .post(`/v1/users/${owner}/documents`)
      .set('Authorization', `Bearer ${token}`)
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');

  it('refuses an owner its third upload of the day with 429 and Retry-After, storing nothing; others go on', async () => {
    const [owner, other] = [await createUser(), await createUser()];
    expect([(await upload(owner)).status, (await upload(owner)).status]).toEqual([201, 201]);
    const refused = await upload(owner);
    expect(refused.status).toBe(429);
    // When the first of the two leaves the 24 hours: about a day from now.
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(86_400 - 60);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(86_400);
    expect(refused.body).toMatchObject({ name: 'TooManyRequestsError' });
    const [{ n }] = (await t.dataSource.query(
      'SELECT count(*)::int AS n FROM documents WHERE owner_id = $1',
      [owner],
    )) as { n: number }[];
    expect(n).toBe(2);
    const folder = path.join(t.dataDir, 'documents', client.appId);
    expect(readdirSync(folder)).toHaveLength(2);
    expect((await upload(other)).status).toBe(201);
  });

  it('Retry-After is when a place frees: the limit-th newest upload leaving the 24 hours, also when more are counted than the limit', async () => {
    const owner = await createUser();
    expect([(await upload(owner)).status, (await upload(owner)).status]).toEqual([201, 201]);
    // A third upload in the window, as a limit lowered since leaves it: three counted where two are allowed.
    const [added] = (await t.dataSource.query(
      `INSERT INTO documents SELECT (jsonb_populate_record(d, jsonb_build_object('id', gen_random_uuid(),
          'storage_key', d.app_id || '/' || gen_random_uuid()))).* FROM documents d WHERE owner_id = $1 LIMIT 1
       RETURNING id`,
      [owner],
    )) as { id: string }[];
    // Made 20, 10 and 5 hours ago: the second newest (10 hours) leaving frees a place, in 14 hours.
    await t.dataSource.query(
      `UPDATE documents d SET created_at = now() - make_interval(hours => h.hours)
         FROM (SELECT id, (ARRAY[20, 10, 5])[row_number() OVER (ORDER BY id)] AS hours FROM documents
                WHERE owner_id = $1) h
        WHERE d.id = h.id`,
      [owner],
    );
    const before = Date.now();
    const refused = await upload(owner);
    const after = Date.now();
    expect(refused.status).toBe(429);
    const [{ frees }] = (await t.dataSource.query(
      `SELECT extract(epoch FROM created_at + interval '1 day') * 1000 AS frees FROM documents
        WHERE owner_id = $1 ORDER BY created_at DESC OFFSET 1 LIMIT 1`,
      [owner],
    )) as { frees: string }[];
    const seconds = Number(refused.headers['retry-after']);
    expect(seconds).toBeGreaterThanOrEqual(Math.floor((Number(frees) - after) / 1000));
    expect(seconds).toBeLessThanOrEqual(Math.ceil((Number(frees) - before) / 1000) + 1);
    expect(seconds).toBeLessThan(15 * 3600); // not the oldest's 4 hours, not a day
    expect(seconds).toBeGreaterThan(13 * 3600);
    // The row has no bytes: it goes, so that the application's folder matches its rows again.
    await t.dataSource.query('DELETE FROM documents WHERE id = $1', [added.id]);
  });

  it('lets two of three uploads sent at once through, and keeps no bytes of the third', async () => {
    const owner = await createUser();
    const statuses = (await Promise.all([upload(owner), upload(owner), upload(owner)])).map((r) => r.status);
    expect(statuses.sort()).toEqual([201, 201, 429]);
    const [{ n }] = (await t.dataSource.query(
      'SELECT count(*)::int AS n FROM documents WHERE owner_id = $1',
      [owner],
    )) as { n: number }[];
    expect(n).toBe(2);
    const keys = (await t.dataSource.query('SELECT storage_key FROM documents WHERE app_id = $1', [
      client.appId,
    ])) as { storage_key: string }[];
    const folder = path.join(t.dataDir, 'documents', client.appId);
    expect(readdirSync(folder).sort()).toEqual(keys.map((k) => k.storage_key.split('/')[1]).sort());
  });
});

describe("KYC verdicts on a deleted owner's session", () => {
  let t: TestApp;
  let token: string;
  let verification: KycVerificationService;
  const auth = () => ({ Authorization: `Bearer ${token}` });

  beforeAll(async () => {
    // The worker's service is called by hand: the simulator's own verdicts would come an hour later.
    t = await startTestApp({ runWorker: true, env: { KYC_SIM_DELAY_MS: '3600000' } });
    token = await accessToken(t.http, await registerClient(t.app));
    verification = t.app.get(KycVerificationService, { strict: false });
  });
  afterAll(() => t.close());

  /** A new owner's session with its DOCUMENT_FRONT submitted. */
  const submitted = async (ownerType: 'USER' | 'COMPANY') => {
    const base = ownerType === 'USER' ? '/v1/users' : '/v1/companies';
    const owner = await request(t.http)
      .post(base)
      .set(auth())
      .send(ownerType === 'USER' ? userBody() : companyBody());
    expect(owner.status).toBe(201);
    const ownerId = owner.body.uuid as string;
    const document = await request(t.http)
      .post(`${base}/${ownerId}/documents`)
      .set(auth())
      .field('documentType', 'DNI_FRONT')
      .field('name', 'front')
      .attach('file', PNG, 'x.png');
    expect(document.status).toBe(201);
    const session = await request(t.http).post('/v1/kyc/sessions').set(auth()).send({ ownerType, ownerId });
    expect(session.status).toBe(201);
    const id = session.body.uuid as string;
    const step = await request(t.http)
      .post(`/v1/kyc/sessions/${id}/steps/DOCUMENT_FRONT`)
      .set(auth())
      .send({ documentUuid: document.body.uuid });
    expect(step.status).toBe(202);
    return { id, ownerId, base };
  };
  /** What a verdict writes about a session: its status, its step's, its events and the provider's records. */
  const traces = async (id: string) =>
    (
      (await t.dataSource.query(
        `SELECT k.status, s.status AS step,
                (SELECT count(*)::int FROM webhook_events e WHERE e.subject = k.id::text) AS events,
                (SELECT count(*)::int FROM audit_records a
                  WHERE a.resource_id = k.id::text AND a.principal = 'kyc-provider') AS records
           FROM kyc_sessions k JOIN kyc_session_steps s ON s.session_id = k.id AND s.step = 'DOCUMENT_FRONT'
          WHERE k.id = $1`,
        [id],
      )) as unknown[]
    )[0];
  const untouched = { status: 'IN_PROGRESS', step: 'PENDING', events: 0, records: 0 };

  /** A user's and a company's session, each with a step submitted, their owners deleted; and two of live owners. */
  const deletedAndLive = async () => {
    const gone = [await submitted('USER'), await submitted('COMPANY')];
    const live = [await submitted('USER'), await submitted('COMPANY')];
    for (const { base, ownerId } of gone)
      expect((await request(t.http).delete(`${base}/${ownerId}`).set(auth())).status).toBe(204);
    return { gone, live };
  };

  it("drops a verdict that arrives after the owner's deletion: nothing written or sent, an info line without personal data", async () => {
    const { gone, live } = await deletedAndLive();
    const lines: unknown[][] = [];
    const info = Object.getOwnPropertyDescriptor(PinoLogger.prototype, 'info')!;
    PinoLogger.prototype.info = function (this: PinoLogger, ...args: Parameters<PinoLogger['info']>) {
      lines.push(args);
      (info.value as PinoLogger['info']).apply(this, args);
    };
    try {
      expect(await verification.complete(gone[0].id, 'DOCUMENT_FRONT', 'SUCCESS')).toBe(false);
      expect(await verification.complete(gone[1].id, 'DOCUMENT_FRONT', 'FAILED', 'blurry')).toBe(false);
    } finally {
      Object.defineProperty(PinoLogger.prototype, 'info', info);
    }
    for (const { id } of gone) expect(await traces(id)).toEqual(untouched);
    // Only ids: no owner, no name, no tax id.
    expect(lines.filter(([, message]) => String(message).includes('KYC verdict dropped'))).toEqual(
      gone.map(({ id }) => [
        { sessionId: id, step: 'DOCUMENT_FRONT' },
        "KYC verdict dropped: the session's owner was deleted",
      ]),
    );
    // A live owner's verdict lands, a user's as a company's.
    for (const { id } of live) {
      expect(await verification.complete(id, 'DOCUMENT_FRONT', 'SUCCESS')).toBe(true);
      expect(await traces(id)).toEqual({ status: 'IN_PROGRESS', step: 'SUCCESS', events: 1, records: 1 });
    }
  });

  it("the simulator's job for a deleted owner's step completes as dropped, not as the verdict it drew (decision 0078)", async () => {
    const { gone, live } = await deletedAndLive();
    const queue = t.app.get(QueueFactory).queue(QUEUES.kyc);
    /** A job of the simulator for the session's step, due now, run by the worker: its state and result. */
    const verify = async (sessionId: string) => {
      const added = await queue.add(
        JOBS.verifyKycStep,
        { sessionId, step: 'DOCUMENT_FRONT' },
        { jobId: `test-now-${sessionId}` },
      );
      await pollUntil('the verification job to end', async () =>
        ['completed', 'failed'].includes(await added.getState()),
      );
      const done = (await queue.getJob(added.id ?? ''))!;
      return [await done.getState(), done.returnvalue as unknown];
    };
    for (const { id } of gone) {
      expect(await verify(id)).toEqual(['completed', 'dropped']);
      expect(await traces(id)).toEqual(untouched);
    }
    for (const { id } of live) {
      expect(await verify(id)).toEqual(['completed', 'SUCCESS']);
      expect(await traces(id)).toEqual({ status: 'IN_PROGRESS', step: 'SUCCESS', events: 1, records: 1 });
    }
  });

  it("the recovery sweep resubmits only live owners' steps", async () => {
    const { gone, live } = await deletedAndLive();
    const ours = [...gone, ...live].map(({ id }) => id);
    const overdue = (await verification.overdueSteps(new Date(Date.now() + 60_000)))
      .filter(({ sessionId }) => ours.includes(sessionId))
      .map(({ sessionId, step }) => `${sessionId} ${step}`);
    expect(overdue.sort()).toEqual(live.map(({ id }) => `${id} DOCUMENT_FRONT`).sort());
  });

  it('a verdict that comes while the owner is being deleted waits for the deletion, then is dropped', async () => {
    const session = await submitted('USER');
    // What DELETE /users/{uuid} does (the owner row locked, then soft-deleted), held open.
    const deleting = await holdTransaction(t.dataSource, [
      ['SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [session.ownerId]],
      ['UPDATE users SET deleted_at = now() WHERE id = $1', [session.ownerId]],
    ]);
    try {
      const verdict = verification.complete(session.id, 'DOCUMENT_FRONT', 'SUCCESS');
      await deleting.untilWaiting();
      await deleting.commit();
      expect(await verdict).toBe(false);
    } finally {
      await deleting.release();
    }
    expect(await traces(session.id)).toEqual(untouched);
  });
});
