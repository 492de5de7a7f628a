import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { QUEUES, JOBS } from '../src/common/queue/queue-names.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { DocumentReaper, type ReapReport } from '../src/modules/kyc/documents/document-reaper.js';
import {
  DOCUMENT_STORAGE,
  type DocumentStorage,
} from '../src/modules/kyc/documents/document-storage.port.js';
import { accessToken, registerClient } from './support/auth.js';
import { createTestDatabase, holdTransaction } from './support/database.js';
import { binary, PNG, userBody } from './support/identity.js';
import { runCli } from './support/processes.js';
import { startS3Peer, type S3Peer } from './support/s3-server.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/webhook-receiver.js';

const HOUR = 3_600_000;
/** Older than the default grace period (DOCUMENT_REAPER_GRACE_HOURS, 168): eight days, in hours. */
const OLD = 8 * 24;

/** How a storage's objects are seen and aged from the test: by key (`<appId>/<name>`). */
interface StorageProbe {
  exists(key: string): boolean;
  /** Sets the object's modification time `hours` back. */
  age(key: string, hours: number): void;
}

/** `app`'s local disk storage (DATA_DIR/documents), its files by key. */
function onDisk(app: () => TestApp): StorageProbe & { file(key: string): string } {
  const file = (key: string) => path.join(app().dataDir, 'documents', key);
  return {
    file,
    exists: (key) => existsSync(file(key)),
    age: (key, hours) => {
      const at = new Date(Date.now() - hours * HOUR);
      utimesSync(file(key), at, at);
    },
  };
}

/** `documents reap` through the built CLI against `t`'s database and DATA_DIR, with `env` besides. */
const reapCli = (t: TestApp, args: string[], env: Record<string, string> = {}) =>
  runCli(t, ['documents', 'reap', ...args], env);

/** An application with a user, and its token: uploads go through the API as clients send them. */
async function applicationWithUser(t: TestApp) {
  const client = await registerClient(t.app);
  const token = await accessToken(t.http, client);
  const user = await request(t.http)
    .post('/v1/users')
    .set('Authorization', `Bearer ${token}`)
    .send(userBody());
  expect(user.status).toBe(201);
  const upload = async () => {
    const response = await request(t.http)
      .post(`/v1/users/${user.body.uuid as string}/documents`)
      .set('Authorization', `Bearer ${token}`)
      .field('documentType', 'DNI_FRONT')
      .attach('file', PNG, 'front.png');
    expect(response.status).toBe(201);
    return { id: response.body.uuid as string, key: `${client.appId}/${response.body.uuid as string}` };
  };
  const download = (id: string) =>
    request(t.http)
      .get(`/v1/documents/${id}/content`)
      .set('Authorization', `Bearer ${token}`)
      .buffer(true)
      .parse(binary);
  return { appId: client.appId, userId: user.body.uuid as string, token, upload, download };
}

/**
 * What a storage holds after uploads cut short: a document uploaded through the API (its row names it), bytes
 * stored by an upload whose row never came (one old, one young), and old bytes of an application this database
 * does not know. All but the young one written eight days ago.
 */
async function storedAfterCrashes(t: TestApp, probe: StorageProbe) {
  const storage = t.app.get<DocumentStorage>(DOCUMENT_STORAGE);
  const application = await applicationWithUser(t);
  const document = await application.upload();
  const oldOrphan = `${application.appId}/${randomUUID()}`;
  const youngOrphan = `${application.appId}/${randomUUID()}`;
  const foreign = `${randomUUID()}/${randomUUID()}`;
  for (const key of [oldOrphan, youngOrphan, foreign]) await storage.put(key, PNG);
  for (const key of [document.key, oldOrphan, foreign]) probe.age(key, OLD);
  probe.age(youngOrphan, 2);
  return { application, document, oldOrphan, youngOrphan, foreign };
}

/** A dry run's report, with the default grace, of a storage that holds only what storedAfterCrashes wrote. */
const dryRunReport = (stored: { oldOrphan: string }): ReapReport => ({
  dryRun: true,
  olderThanMinutes: 168 * 60,
  listed: 4,
  recent: 1,
  referenced: 1,
  unknownApplication: 1,
  orphans: [stored.oldOrphan],
  held: false,
  removed: 0,
  failed: [],
});

describe('the reaper of document bytes that no row names, on local disk', () => {
  let t: TestApp;
  let reaper: DocumentReaper;
  const probe = onDisk(() => t);
  const { file } = probe;
  /** What `put` leaves when its process is killed before the rename: `<appId>/<uuid>.<pid>.tmp`. */
  const leftover = (appId: string, hours: number) => {
    const key = `${appId}/${randomUUID()}.4242.tmp`;
    mkdirSync(path.dirname(file(key)), { recursive: true });
    writeFileSync(file(key), PNG.subarray(0, 10));
    probe.age(key, hours);
    return key;
  };

  beforeAll(async () => {
    t = await startTestApp();
    reaper = t.app.get(DocumentReaper);
  });
  afterAll(() => t.close());

  it('removes old bytes no row names and stale leftovers, keeps the rest; a dry run removes nothing', async () => {
    const stored = await storedAfterCrashes(t, probe);
    const staleLeftover = leftover(stored.application.appId, OLD);
    const freshLeftover = leftover(stored.application.appId, 0);
    const everything = [
      stored.document.key,
      stored.oldOrphan,
      stored.youngOrphan,
      stored.foreign,
      staleLeftover,
      freshLeftover,
    ];

    const dry = await reaper.reap({ dryRun: true });
    expect(dry).toEqual({
      dryRun: true,
      olderThanMinutes: 168 * 60,
      listed: 6,
      recent: 2,
      referenced: 1,
      unknownApplication: 1,
      orphans: expect.arrayContaining([stored.oldOrphan, staleLeftover]) as string[],
      held: false,
      removed: 0,
      failed: [],
    });
    expect(dry.orphans).toHaveLength(2);
    expect(everything.filter((key) => !probe.exists(key))).toEqual([]);

    const done = await reaper.reap();
    expect({ ...done, orphans: [...done.orphans].sort() }).toEqual({
      ...dry,
      dryRun: false,
      orphans: [stored.oldOrphan, staleLeftover].sort(),
      removed: 2,
    });
    expect(everything.filter((key) => !probe.exists(key)).sort()).toEqual(
      [stored.oldOrphan, staleLeftover].sort(),
    );
    // The document's bytes, eight days old, stay and are still served.
    const download = await stored.application.download(stored.document.id);
    expect(download.status).toBe(200);
    expect((download.body as Buffer).equals(PNG)).toBe(true);

    // A shorter grace reaches the young orphan and the fresh leftover (two hours and now: only the first).
    const shorter = await reaper.reap({ olderThanMs: HOUR });
    expect(shorter).toMatchObject({ orphans: [stored.youngOrphan], removed: 1, referenced: 1 });
    expect(probe.exists(stored.youngOrphan)).toBe(false);
    expect(probe.exists(freshLeftover)).toBe(true);
  });

  it('two reapers at once both finish, and remove each orphan', async () => {
    const { appId } = await applicationWithUser(t);
    const storage = t.app.get<DocumentStorage>(DOCUMENT_STORAGE);
    const orphans = [1, 2, 3, 4, 5].map(() => `${appId}/${randomUUID()}`);
    for (const key of orphans) {
      await storage.put(key, PNG);
      probe.age(key, OLD);
    }
    const runs: ReapReport[] = await Promise.all([reaper.reap(), reaper.reap()]);
    expect(runs.map((run) => run.failed)).toEqual([[], []]);
    const removed = new Set(runs.flatMap((run) => run.orphans));
    expect([...removed].filter((key) => key.startsWith(appId)).sort()).toEqual([...orphans].sort());
    expect(orphans.filter((key) => probe.exists(key))).toEqual([]);
  });

  it('keeps the bytes of an upload still recording its row, which then commits and is served', async () => {
    const application = await applicationWithUser(t);
    const folder = path.join(t.dataDir, 'documents', application.appId);
    // The owner locked: the upload stores its bytes, then waits for the lock to write its row.
    const held = await holdTransaction(t.dataSource, [
      ['SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [application.userId]],
    ]);
    const uploaded = application.upload();
    try {
      await held.untilWaiting();
      // Its bytes are stored, no row names them yet; written a moment ago, they are kept.
      const [name] = readdirSync(folder);
      const [{ n }] = (await t.dataSource.query('SELECT count(*)::int AS n FROM documents WHERE id = $1', [
        name,
      ])) as { n: number }[];
      expect(n).toBe(0);
      const report = await reaper.reap();
      expect(report.orphans.filter((key) => key.startsWith(application.appId))).toEqual([]);
      expect(readdirSync(folder)).toEqual([name]);
    } finally {
      await held.release();
    }
    const document = await uploaded;
    expect(document.key).toBe(`${application.appId}/${readdirSync(folder)[0]}`);
    const download = await application.download(document.id);
    expect(download.status).toBe(200);
    expect((download.body as Buffer).equals(PNG)).toBe(true);
  });
});

describe('the reaper of document bytes that no row names, in an S3-compatible bucket', () => {
  let peer: S3Peer;
  let t: TestApp;
  const objectPath = (key: string) => `/kyc-documents/wallet/${key}`;
  const probe: StorageProbe = {
    exists: (key) => peer.objects.has(objectPath(key)),
    age: (key, hours) => {
      peer.objects.get(objectPath(key))!.modifiedAt = new Date(Date.now() - hours * HOUR);
    },
  };
  const s3Env = () => ({
    DOCUMENT_STORAGE: 's3',
    S3_ENDPOINT: peer.url,
    S3_BUCKET: 'kyc-documents',
    S3_REGION: 'sa-east-1',
    S3_ACCESS_KEY_ID: 'AKIDWALLETTEST',
    S3_SECRET_ACCESS_KEY: 'the-right-secret',
    S3_KEY_PREFIX: 'wallet',
  });

  beforeAll(async () => {
    // Two keys a page: the listing of this file's objects takes several pages.
    peer = await startS3Peer('AKIDWALLETTEST', 'the-right-secret', { listPageSize: 2 });
    t = await startTestApp({ env: s3Env() });
  });
  afterAll(async () => {
    await t.close();
    await peer.close();
  });

  it('lists the prefix page by page with signed requests, removes old orphans only, and leaves other keys alone', async () => {
    const stored = await storedAfterCrashes(t, probe);
    // Outside the prefix, and under it with another shape: not the service's, never listed.
    const outside = `/kyc-documents/other/${stored.application.appId}/${randomUUID()}`;
    const otherShape = objectPath(`${stored.application.appId}/notes.txt`);
    for (const path of [outside, otherShape])
      peer.objects.set(path, { body: PNG, headers: {}, modifiedAt: new Date(Date.now() - OLD * HOUR) });
    const reaper = t.app.get(DocumentReaper);
    const sent = peer.requests.length;

    const dry = await reaper.reap({ dryRun: true });
    expect(dry).toEqual(dryRunReport(stored));
    const lists = peer.requests.slice(sent);
    // 5 keys under the prefix, 2 a page: 3 pages.
    expect(lists).toEqual(
      [1, 2, 3].map(() => ({ method: 'GET', path: '/kyc-documents/', signatureValid: true })),
    );
    expect(peer.objects.size).toBe(6);

    const done = await reaper.reap();
    expect(done).toMatchObject({ orphans: [stored.oldOrphan], removed: 1, failed: [] });
    expect(
      peer.requests
        .filter((call) => call.method === 'DELETE')
        .map((call) => [call.path, call.signatureValid]),
    ).toEqual([[objectPath(stored.oldOrphan), true]]);
    for (const key of [stored.document.key, stored.youngOrphan, stored.foreign])
      expect(probe.exists(key)).toBe(true);
    for (const path of [outside, otherShape]) expect(peer.objects.has(path)).toBe(true);
    const download = await stored.application.download(stored.document.id);
    expect(download.status).toBe(200);
    expect((download.body as Buffer).equals(PNG)).toBe(true);
  });

  it('documents reap through the CLI uses the bucket too', async () => {
    const { appId } = await applicationWithUser(t);
    const orphan = `${appId}/${randomUUID()}`;
    await t.app.get<DocumentStorage>(DOCUMENT_STORAGE).put(orphan, PNG);
    probe.age(orphan, OLD);
    const result = await reapCli(t, [], s3Env());
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ orphans: [orphan], removed: 1 });
    expect(probe.exists(orphan)).toBe(false);
  });
});

describe('documents reap (node dist/src/cli.js), on local disk', () => {
  let t: TestApp;
  const probe = onDisk(() => t);
  const cli = (args: string[]) => reapCli(t, args);

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('prints what it would remove with --dry-run and removes it without; --older-than takes minutes or a duration', async () => {
    const stored = await storedAfterCrashes(t, probe);
    const all = [stored.document.key, stored.oldOrphan, stored.youngOrphan, stored.foreign];

    const dry = await cli(['--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout.split('\n')).toEqual([expect.any(String), '']);
    expect(JSON.parse(dry.stdout)).toEqual(dryRunReport(stored));
    expect(all.filter((key) => !probe.exists(key))).toEqual([]);

    const done = await cli([]);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ dryRun: false, orphans: [stored.oldOrphan], removed: 1 });
    expect(all.filter((key) => !probe.exists(key))).toEqual([stored.oldOrphan]);

    // The young orphan is two hours old: 150 minutes keep it, 90 minutes or 1h reach it.
    const longer = await cli(['--older-than', '150', '--dry-run']);
    expect(JSON.parse(longer.stdout)).toMatchObject({ olderThanMinutes: 150, orphans: [] });
    const shorter = await cli(['--older-than', '1h']);
    expect(JSON.parse(shorter.stdout)).toMatchObject({ olderThanMinutes: 60, orphans: [stored.youngOrphan] });
    expect(probe.exists(stored.youngOrphan)).toBe(false);
    expect(probe.exists(stored.document.key)).toBe(true);
  });

  it.each([
    [['--older-than', '59'], /--older-than must be minutes or a duration/],
    [['--older-than', '30m'], /--older-than must be minutes or a duration/],
    [['--older-than', 'yesterday'], /--older-than must be minutes or a duration/],
    [['--everything'], /unknown option '--everything'/],
  ])('refuses %j: non-zero exit, the problem on stderr, nothing removed', async (args, problem) => {
    const { appId } = await applicationWithUser(t);
    const orphan = `${appId}/${randomUUID()}`;
    await t.app.get<DocumentStorage>(DOCUMENT_STORAGE).put(orphan, PNG);
    probe.age(orphan, OLD);
    const result = await cli(args);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(problem);
    expect(probe.exists(orphan)).toBe(true);
  });
});

describe('the reaper finding more orphans than DOCUMENT_REAPER_MAX_ORPHANS', () => {
  let t: TestApp;
  const probe = onDisk(() => t);
  const cli = (args: string[]) => reapCli(t, args, { DOCUMENT_REAPER_MAX_ORPHANS: '3' });
  /** `count` old bytes of a known application with no row, as a database restored from an older backup leaves. */
  const orphansOf = async (count: number) => {
    const { appId } = await applicationWithUser(t);
    const storage = t.app.get<DocumentStorage>(DOCUMENT_STORAGE);
    const keys = Array.from({ length: count }, () => `${appId}/${randomUUID()}`);
    for (const key of keys) {
      await storage.put(key, PNG);
      probe.age(key, OLD);
    }
    return keys;
  };

  beforeAll(async () => {
    t = await startTestApp({ env: { DOCUMENT_REAPER_MAX_ORPHANS: '3' } });
  });
  afterAll(() => t.close());

  it('removes none of them (held) until forced; up to the limit it removes them', async () => {
    const reaper = t.app.get(DocumentReaper);
    const many = await orphansOf(4);
    const held = await reaper.reap();
    expect(held).toMatchObject({ held: true, removed: 0, failed: [] });
    expect([...held.orphans].sort()).toEqual([...many].sort());
    expect(many.filter((key) => !probe.exists(key))).toEqual([]);

    const forced = await reaper.reap({ force: true });
    expect(forced).toMatchObject({ held: false, removed: 4 });
    expect(many.filter((key) => probe.exists(key))).toEqual([]);

    const few = await orphansOf(3);
    expect(await reaper.reap()).toMatchObject({ held: false, removed: 3 });
    expect(few.filter((key) => probe.exists(key))).toEqual([]);
  });

  it('the CLI exits 1 naming --force and removes nothing; --dry-run reports it with exit 0; --force removes them', async () => {
    const many = await orphansOf(4);
    const dry = await cli(['--dry-run']);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, held: true, removed: 0 });

    const held = await cli([]);
    expect(held.code).toBe(1);
    expect(held.stderr).toContain('error: 4 orphans, more than DOCUMENT_REAPER_MAX_ORPHANS: none removed');
    expect(held.stderr).toContain('--force');
    expect(JSON.parse(held.stdout)).toMatchObject({ dryRun: false, held: true, removed: 0 });
    expect(many.filter((key) => !probe.exists(key))).toEqual([]);

    const forced = await cli(['--force']);
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ held: false, removed: 4 });
    expect(many.filter((key) => probe.exists(key))).toEqual([]);
  });
});

describe('the reaper in the worker', () => {
  /** One database for a worker with the scheduler, then one started with it turned off. */
  let database: { url: string; drop: () => Promise<void> };
  let t: TestApp | undefined;

  const disk = onDisk(() => t!);
  const runJob = async (app: TestApp) => {
    const queue = app.app.get(QueueFactory).queue(QUEUES.documents);
    const job = await queue.add(JOBS.reapDocuments, {});
    await pollUntil('the reap job to complete', async () => (await job.getState()) === 'completed');
    return (await queue.getJob(job.id ?? ''))?.returnvalue as unknown;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.close();
    await database.drop();
  });

  it('runs every DOCUMENT_REAPER_INTERVAL_HOURS as a job scheduler, and its job removes old orphans only', async () => {
    t = await startTestApp({
      runWorker: true,
      databaseUrl: database.url,
      env: { DOCUMENT_REAPER_INTERVAL_HOURS: '6' },
    });
    const queue = t.app.get(QueueFactory).queue(QUEUES.documents);
    await pollUntil('the scheduler', async () => Boolean(await queue.getJobScheduler(JOBS.reapDocuments)));
    expect(await queue.getJobScheduler(JOBS.reapDocuments)).toMatchObject({
      key: JOBS.reapDocuments,
      every: 6 * HOUR,
    });

    const storage = t.app.get<DocumentStorage>(DOCUMENT_STORAGE);
    const { appId } = await applicationWithUser(t);
    const [old, young] = [`${appId}/${randomUUID()}`, `${appId}/${randomUUID()}`];
    for (const key of [old, young]) await storage.put(key, PNG);
    disk.age(old, OLD);

    // The scheduler's own run may have removed it first: the counts are not asserted.
    expect(await runJob(t)).toEqual({
      orphans: expect.any(Number),
      held: false,
      removed: expect.any(Number),
      failed: 0,
    });
    expect(disk.exists(old)).toBe(false);
    expect(disk.exists(young)).toBe(true);
  });

  it('DOCUMENT_REAPER_INTERVAL_HOURS=0 removes the scheduler, and a job then removes nothing', async () => {
    // The scheduler the worker above registered is in the queue; that worker stops, one with 0 starts.
    expect(
      await t!.app.get(QueueFactory).queue(QUEUES.documents).getJobScheduler(JOBS.reapDocuments),
    ).toBeTruthy();
    await t!.close();
    t = await startTestApp({
      runWorker: true,
      databaseUrl: database.url,
      env: { DOCUMENT_REAPER_INTERVAL_HOURS: '0' },
    });
    const queue = t.app.get(QueueFactory).queue(QUEUES.documents);
    await pollUntil('the scheduler to go', async () => !(await queue.getJobScheduler(JOBS.reapDocuments)));
    const { appId } = await applicationWithUser(t);
    const old = `${appId}/${randomUUID()}`;
    await t.app.get<DocumentStorage>(DOCUMENT_STORAGE).put(old, PNG);
    disk.age(old, OLD);
    expect(await runJob(t)).toBeNull(); // nothing done
    expect(disk.exists(old)).toBe(true);
  });
});
