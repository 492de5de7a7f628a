import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { QUEUES } from '../src/common/queue/queue-names.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { LedgerService } from '../src/modules/wallet/ledger/ledger.service.js';
import { accessToken, registerClient } from './support/auth.js';
import { childEnv, ROOT } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import {
  balanceOf,
  DIRECTORY,
  pollUntil,
  postTransfer,
  transferBody,
  transferStatus,
} from './support/transfers.js';
import { createOwner, openAccount, setBalance } from './support/wallet.js';

/**
 * A restart with transfers in flight: the API writes external transfers while no worker runs, the queue then
 * loses their jobs, and a worker process started afterwards settles every one of them exactly once.
 */
describe('clearing recovery after a restart with transfers in flight', () => {
  let t: TestApp;
  let dataDir: string;
  let worker: ChildProcess | undefined;

  beforeAll(async () => {
    t = await startTestApp({ env: { CLEARING_SIM_DELAY_MS: '100' } });
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-recovery-'));
  });
  afterAll(async () => {
    worker?.kill('SIGKILL');
    await t.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('settles every stalled transfer once, with the right money movement', async () => {
    const client = await registerClient(t.app);
    const token = await accessToken(t.http, client);
    const account = await openAccount(t.http, token, client.appId, await createOwner(t.http, token));
    await setBalance(t.http, token, account.uuid, 1000);
    const ok = await postTransfer(t.http, token, transferBody(account.uuid, DIRECTORY.nacion.number, 100));
    const refused = await postTransfer(
      t.http,
      token,
      transferBody(account.uuid, DIRECTORY.sinGarantia.number, 50),
    );
    const deposit = await postTransfer(
      t.http,
      token,
      transferBody(account.uuid, DIRECTORY.nacion.number, 30, { movementType: 'DEPOSIT' }),
    );
    expect([ok.status, refused.status, deposit.status]).toEqual([201, 201, 201]);
    expect(await balanceOf(t.http, token, account.uuid)).toBe(850); // both withdrawals held

    // The queue loses every job, and the transfers have waited long past the simulated delay.
    await t.app.get(QueueFactory).queue(QUEUES.clearing).obliterate({ force: true });
    await t.dataSource.query(
      `UPDATE transfers SET updated_at = now() - interval '1 hour' WHERE status = 'INICIADO'`,
    );

    worker = spawn(process.execPath, [path.join(ROOT, 'dist/src/worker.js')], {
      cwd: ROOT,
      env: childEnv({
        DATABASE_URL: t.databaseUrl,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        CLEARING_SIM_DELAY_MS: '100',
        QUEUE_PREFIX: t.config.queuePrefix,
        ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
      }),
      stdio: 'ignore',
    });
    const ids = [ok.body.uuid, refused.body.uuid, deposit.body.uuid] as string[];
    const finals = await pollUntil(
      () => Promise.all(ids.map((id) => transferStatus(t.dataSource, id))),
      (statuses) => statuses.every((status) => !['INICIADO', 'EN_CURSO'].includes(status)),
      30_000,
    );
    expect(finals).toEqual(['ACREDITADO', 'SIN_GARANTIA', 'ACREDITADO']);
    // 1000 − 100 captured; the 50 released; + 30 deposited (no fee, no tax configured).
    expect(await balanceOf(t.http, token, account.uuid)).toBe(930);

    for (const id of ids) {
      const history = (await t.dataSource.query(
        `SELECT from_status, to_status FROM transfer_status_path WHERE transfer_id = $1 ORDER BY step`,
        [id],
      )) as { from_status: string | null; to_status: string }[];
      expect(history.map((row) => row.to_status).slice(0, 3)).toEqual(['COMMITING', 'INICIADO', 'EN_CURSO']);
      expect(history).toHaveLength(4); // exactly one final transition
      const [{ n }] = (await t.dataSource.query(
        `SELECT count(*)::int AS n FROM journal_entries WHERE reference = $1 AND kind IN ('TRANSFER_CAPTURE', 'TRANSFER_RELEASE', 'TRANSFER_CREDIT')`,
        [id],
      )) as { n: number }[];
      expect(n).toBe(1); // settled once
    }
    expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  });
});
