import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JOBS, QUEUES } from '../src/common/queue/queue-names.js';
import { QueueFactory } from '../src/common/queue/queue.factory.js';
import { APP_CONFIG } from '../src/config/app-config.js';
import { ClearingSimulatorProcessor } from '../src/modules/transfers/clearing/clearing-simulator.processor.js';
import { ClearingService } from '../src/modules/transfers/clearing/clearing.service.js';
import { COUNTERPARTY_DIRECTORY } from '../src/modules/transfers/counterparty/counterparty-directory.port.js';
import { LedgerService } from '../src/modules/wallet/ledger/ledger.service.js';
import { accessToken, registerClient } from './support/auth.js';
import { capturedLogger } from './support/logs.js';
import { childEnv, ROOT, waitFor, WORKER_JS } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollValue } from './support/poll.js';
import { balanceOf, DIRECTORY, postTransfer, transferBody, transferStatus } from './support/transfers.js';
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
    const finals = await pollValue(
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

/**
 * The recovery sweep with the real service, queue, directory and database. Each sweeper is a processor of its
 * own, as each worker process has one: its own round guard and its own place in the stalled transfers.
 */
describe('clearing recovery sweep: a failing transfer, several workers, long backlogs', () => {
  let t: TestApp;
  let token: string;
  let accountId: string;

  beforeAll(async () => {
    t = await startTestApp({ env: { CLEARING_SIM_DELAY_MS: '100' } });
    const client = await registerClient(t.app);
    token = await accessToken(t.http, client);
    accountId = (await openAccount(t.http, token, client.appId, await createOwner(t.http, token))).uuid;
    await setBalance(t.http, token, accountId, 1000);
  });
  afterAll(async () => {
    await t.close();
  });

  const sweeper = () => {
    const { logger, lines } = capturedLogger();
    const processor = new ClearingSimulatorProcessor(
      t.app.get(ClearingService),
      t.app.get(QueueFactory),
      t.app.get(COUNTERPARTY_DIRECTORY),
      t.app.get(APP_CONFIG),
      logger,
    );
    return { processor, lines };
  };

  /**
   * `count` external WITHDRAWs of 1 whose jobs were lost, stalled long past the simulated delay, the first the
   * oldest (each a second older than the next).
   */
  const stalledTransfers = async (count: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let from = 0; from < count; from += 50) {
      const answers = await Promise.all(
        Array.from({ length: Math.min(50, count - from) }, () =>
          postTransfer(t.http, token, transferBody(accountId, DIRECTORY.nacion.number, 1)),
        ),
      );
      for (const answer of answers) {
        expect(answer.status).toBe(201);
        ids.push((answer.body as { uuid: string }).uuid);
      }
    }
    await t.app.get(QueueFactory).queue(QUEUES.clearing).obliterate({ force: true });
    await t.dataSource.query(
      `UPDATE transfers SET updated_at = now() - interval '1 hour' - (ordinality * interval '1 second')
         FROM unnest($1::uuid[]) WITH ORDINALITY AS stalled(id, ordinality)
        WHERE transfers.id = stalled.id`,
      [[...ids].reverse()],
    );
    return ids;
  };

  const statusesOf = async (ids: string[]): Promise<string[]> => {
    const rows = (await t.dataSource.query(`SELECT id, status FROM transfers WHERE id = ANY($1::uuid[])`, [
      ids,
    ])) as { id: string; status: string }[];
    const byId = new Map(rows.map((row) => [row.id, row.status]));
    return ids.map((id) => byId.get(id) ?? 'missing');
  };

  /** A trigger that fails every change of one transfer's row: its present and its settle throw for real. */
  const poison = (id: string) =>
    t.dataSource.query(`
      CREATE FUNCTION test_poisoned_transfer() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.id = '${id}' THEN RAISE EXCEPTION 'test: this transfer cannot change'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_poisoned_transfer BEFORE UPDATE ON transfers
        FOR EACH ROW EXECUTE FUNCTION test_poisoned_transfer();`);
  const cure = () =>
    t.dataSource.query(
      `DROP TRIGGER test_poisoned_transfer ON transfers; DROP FUNCTION test_poisoned_transfer();`,
    );

  it('a transfer whose step throws is logged by its id and passed over: the round settles the others', async () => {
    const ids = await stalledTransfers(4);
    const [poisoned, ...others] = ids; // the oldest: the first the sweep takes
    await poison(poisoned);
    const { processor, lines } = sweeper();
    let round;
    try {
      round = await processor.recover();
    } finally {
      await cure();
    }
    expect(await statusesOf(ids)).toEqual(['INICIADO', 'ACREDITADO', 'ACREDITADO', 'ACREDITADO']);
    expect(round).toEqual({ settled: others, failed: [poisoned] });

    const failures = lines.filter((line) => line.level === 50);
    expect(failures).toEqual([
      expect.objectContaining({
        transferId: poisoned,
        msg: 'clearing recovery could not settle a stalled transfer; the round goes on without it',
        err: expect.objectContaining({ message: expect.stringContaining('this transfer cannot change') }),
      }),
    ]);
    // The transfer's id, and nothing about who pays whom: no account, counterparty, number or amount.
    const failure = JSON.stringify(failures[0]);
    for (const personal of [accountId, DIRECTORY.nacion.number, 'Contraparte de prueba', '"amount"'])
      expect(failure).not.toContain(personal);

    // Once it can change, the next round settles it, once; the money is as it should be.
    expect(await processor.recover()).toEqual({ settled: [poisoned], failed: [] });
    const [{ n }] = (await t.dataSource.query(
      `SELECT count(*)::int AS n FROM journal_entries WHERE reference = ANY($1::text[]) AND kind = 'TRANSFER_CAPTURE'`,
      [ids],
    )) as { n: number }[];
    expect(n).toBe(4);
    expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  });

  it('a transfer that keeps failing is not tried again before the others: each round goes on where the last stopped', async () => {
    const ids = await stalledTransfers(5);
    const [poisoned, ...others] = ids;
    await poison(poisoned);
    const { processor } = sweeper();
    const rounds = [];
    try {
      // Two transfers a round: the failing one would take a place in every round if each started over.
      for (let i = 0; i < 4; i++) rounds.push(await processor.recover(2));
    } finally {
      await cure();
    }
    expect(rounds).toEqual([
      { settled: [others[0]], failed: [poisoned] },
      { settled: [others[1], others[2]], failed: [] },
      { settled: [others[3]], failed: [] }, // none left after it: the next round starts over
      { settled: [], failed: [poisoned] },
    ]);
    expect(await statusesOf(others)).toEqual(others.map(() => 'ACREDITADO'));
    expect(await processor.recover()).toEqual({ settled: [poisoned], failed: [] });
  });

  it('a round never starts beside another of the same process', async () => {
    const ids = await stalledTransfers(3);
    const { processor } = sweeper();
    const [first, second] = await Promise.all([processor.recover(), processor.recover()]);
    expect(second).toBeUndefined();
    expect(first).toEqual({ settled: ids, failed: [] });
  });

  it('two workers share a backlog of more than a page: each transfer settled by one of them, once', async () => {
    const ids = await stalledTransfers(600);
    const one = sweeper();
    const other = sweeper();
    const [a, b] = await Promise.all([one.processor.recover(), other.processor.recover()]);

    // One round each, and nothing left in flight: the rounds went past 500.
    expect(await statusesOf(ids)).toEqual(ids.map(() => 'ACREDITADO'));
    if (!a || !b) throw new Error('a sweeper skipped its round');
    expect([...a.failed, ...b.failed]).toEqual([]);
    // Handled by exactly one worker each: the two lists share nothing and together hold every transfer.
    const both = [...a.settled, ...b.settled];
    expect(new Set(both).size).toBe(both.length);
    expect([...both].sort()).toEqual([...ids].sort());

    // Exactly one settlement per transfer: one audit record, one ledger entry, one final step, one event.
    const counts = (await t.dataSource.query(
      `SELECT t.id,
              (SELECT count(*)::int FROM audit_records a
                WHERE a.resource_id = t.id::text AND a.action = 'clearing settle') AS audits,
              (SELECT count(*)::int FROM journal_entries j
                WHERE j.reference = t.id::text AND j.kind = 'TRANSFER_CAPTURE') AS entries,
              (SELECT count(*)::int FROM transfer_status_history h
                WHERE h.transfer_id = t.id AND h.to_status = 'ACREDITADO') AS finals,
              (SELECT count(*)::int FROM webhook_events e
                WHERE e.subject = t.id::text AND e.event = 'transfer_update') AS events
         FROM transfers t WHERE t.id = ANY($1::uuid[])`,
      [ids],
    )) as { id: string; audits: number; entries: number; finals: number; events: number }[];
    expect(counts).toHaveLength(ids.length);
    expect(
      counts.filter((row) => row.audits !== 1 || row.entries !== 1 || row.finals !== 1 || row.events !== 1),
    ).toEqual([]);
    expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
  }, 120_000);
});

/**
 * The worker process: a settle job that finds its transfer final does nothing and says so; one that finds a move
 * the transfer cannot make fails at once, logged; a directory whose fixture names an unknown outcome stops the
 * start.
 */
describe('clearing jobs and the directory in the worker process', () => {
  let t: TestApp;
  let dataDir: string;
  const workers: ChildProcess[] = [];

  beforeAll(async () => {
    t = await startTestApp({ env: { CLEARING_SIM_DELAY_MS: '100' } });
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-clearing-jobs-'));
  });
  afterAll(async () => {
    for (const worker of workers) worker.kill('SIGKILL');
    await t.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const startWorker = (env: Record<string, string> = {}) => {
    const worker = spawn(process.execPath, [WORKER_JS], {
      cwd: ROOT,
      env: childEnv({
        DATABASE_URL: t.databaseUrl,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'debug',
        CLEARING_SIM_DELAY_MS: '100',
        QUEUE_PREFIX: t.config.queuePrefix,
        ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
        ...env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    workers.push(worker);
    let output = '';
    worker.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    worker.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const lines = () =>
      output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    return { worker, output: () => output, lines };
  };

  it('a job for a final transfer does nothing; one for a move the transfer cannot make fails, logged, without retries', async () => {
    const client = await registerClient(t.app);
    const token = await accessToken(t.http, client);
    const account = await openAccount(t.http, token, client.appId, await createOwner(t.http, token));
    await setBalance(t.http, token, account.uuid, 1000);
    const settled = await postTransfer(
      t.http,
      token,
      transferBody(account.uuid, DIRECTORY.nacion.number, 10),
    );
    const stuck = await postTransfer(t.http, token, transferBody(account.uuid, DIRECTORY.nacion.number, 20));
    expect([settled.status, stuck.status]).toEqual([201, 201]);
    const settledId = (settled.body as { uuid: string }).uuid;
    const stuckId = (stuck.body as { uuid: string }).uuid;
    const queue = t.app.get(QueueFactory).queue(QUEUES.clearing);
    await queue.obliterate({ force: true });
    // A row in a state the rail never sees (written by hand here): its settle is not a clearing move.
    await t.dataSource.query(`UPDATE transfers SET status = 'COMMITING' WHERE id = $1`, [stuckId]);

    const { worker, lines } = startWorker();
    const job = async (transferId: string, name: string) => {
      const added = await queue.add(
        JOBS.settleTransfer,
        { transferId },
        { attempts: 8, backoff: { type: 'fixed', delay: 10 }, jobId: `${transferId}.${name}` },
      );
      expect(
        await waitFor(async () => ['completed', 'failed'].includes(await added.getState()), 30_000),
      ).toBe(true);
      return (await queue.getJob(added.id ?? ''))!;
    };

    const first = await job(settledId, 'test-first');
    expect([await first.getState(), first.returnvalue]).toEqual(['completed', 'ACREDITADO']);
    const again = await job(settledId, 'test-again');
    expect([await again.getState(), again.returnvalue]).toEqual(['completed', 'already final']);

    const illegal = await job(stuckId, 'test-illegal');
    expect(await illegal.getState()).toBe('failed');
    expect(illegal.attemptsMade).toBe(1); // failed at once: a retry cannot change the transfer's status
    expect(illegal.failedReason).toBe(`transfer ${stuckId} cannot move from COMMITING to ACREDITADO`);
    expect(await transferStatus(t.dataSource, stuckId)).toBe('COMMITING');
    const [{ n }] = (await t.dataSource.query(
      `SELECT count(*)::int AS n FROM journal_entries WHERE reference = $1 AND kind IN ('TRANSFER_CAPTURE', 'TRANSFER_RELEASE', 'TRANSFER_CREDIT')`,
      [stuckId],
    )) as { n: number }[];
    expect(n).toBe(0);

    expect(await waitFor(() => lines().some((line) => line.transferId === stuckId), 10_000)).toBe(true);
    expect(lines().filter((line) => line.transferId === stuckId)).toEqual([
      expect.objectContaining({
        level: 50,
        msg: 'illegal clearing move: the settle job fails',
        from: 'COMMITING',
        to: 'ACREDITADO',
      }),
    ]);
    expect(lines().filter((line) => line.transferId === settledId)).toEqual([
      expect.objectContaining({ level: 20, msg: 'transfer already final; settle job did nothing' }),
    ]);
    worker.kill('SIGTERM');
  });

  it('a directory fixture with an unknown simulate value stops the start, naming the fixture', async () => {
    const fixture = JSON.parse(
      readFileSync(path.join(ROOT, 'config/counterparty-directory.json'), 'utf8'),
    ) as {
      accounts: { alias: string; simulate?: string }[];
    };
    const typo = fixture.accounts.find((account) => account.alias === 'prueba.error.datos')!;
    typo.simulate = 'ERROR_DATO';
    const file = path.join(dataDir, 'directory-with-typo.json');
    writeFileSync(file, JSON.stringify(fixture));

    const { worker, output } = startWorker({ COUNTERPARTY_DIRECTORY_FILE: file });
    // 'close', not the exit: once its output has been read to the end too.
    let closed = false;
    worker.once('close', () => (closed = true));
    // It exits, or (before the fixture was checked) runs and would leave every transfer to that account in flight.
    await waitFor(() => closed || output().includes('"msg":"worker running"'), 30_000);
    expect(output()).not.toContain('"msg":"worker running"');
    expect(await waitFor(() => closed, 10_000)).toBe(true);
    expect(worker.exitCode).toBe(1);
    // A provider that fails to build reaches the process's own fatal line, in JSON like every other line.
    const fatal = output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message?: string } })
      .filter((line) => line.level === 60);
    expect(fatal).toEqual([
      expect.objectContaining({
        msg: 'worker failed to start',
        err: expect.objectContaining({
          message: `${file}: account ${DIRECTORY.errorDatos.number} (prueba.error.datos): "simulate" is "ERROR_DATO", not one of ERROR_DATOS, SIN_GARANTIA, ERROR_ACREDITACION`,
        }),
      }),
    ]);
    expect(
      output()
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('{')),
    ).toEqual([]);
  });
});
