import { randomUUID } from 'node:crypto';
import pg from 'pg';
import request from 'supertest';
import { backendOf, endBackend } from '../src/common/database/backend-identity.js';
import { TransferBatcher } from '../src/modules/transfers/transfer-batcher.js';
import { LedgerService } from '../src/modules/wallet/ledger/ledger.service.js';
import { dataSourceOptions } from '../src/data-source.js';
import { accessToken, registerClient } from './support/auth.js';
import { createTestDatabase } from './support/database.js';
import { bearer } from './support/identity.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollValue } from './support/poll.js';
import { balanceOf, DIRECTORY, postTransfer, transferBody } from './support/transfers.js';
import { createOwner, openAccount, setBalance, type AccountInfo } from './support/wallet.js';

/** A one-pixel PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** A user's DNI_FRONT document (the PNG). */
const uploadFront = (t: TestApp, token: string, owner: string) =>
  request(t.http)
    .post(`/v1/users/${owner}/documents`)
    .set('Authorization', bearer(token))
    .field('documentType', 'DNI_FRONT')
    .attach('file', PNG, 'front.png');

/** The interface's 503 for a service out of reach, with a trackingId and Retry-After (decision 0004). */
function expect503(response: request.Response): void {
  expect({ status: response.status, body: response.body as unknown }).toEqual({
    status: 503,
    body: {
      name: 'ServiceUnavailableError',
      message: 'A service this request needs is not available; try again shortly',
      detail: { trackingId: expect.any(String) },
    },
  });
  expect(response.headers['retry-after']).toBe('1');
}

/**
 * The database out of reach while the API runs (its connections reset, new ones refused, through a TCP proxy in
 * front of the real server): requests answer 503 with the interface's error body, a trackingId and Retry-After,
 * not a 500 as if the request had failed; once the database is back, the same requests succeed.
 */
describe('the database out of reach', () => {
  let database: { url: string; drop: () => Promise<void> };
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    database = await createTestDatabase();
    const direct = new URL(database.url);
    proxy = await startTcpProxy(Number(direct.port));
    const proxied = new URL(database.url);
    proxied.port = String(proxy.port);
    t = await startTestApp({ databaseUrl: proxied.toString() });
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('answers 503 ServiceUnavailableError with a trackingId and Retry-After, then serves again', async () => {
    const client = await registerClient(t.app, 'outage');
    const token = await accessToken(t.http, client);
    const owner = await createOwner(t.http, token);
    const account = await openAccount(t.http, token, client.appId, owner);
    await setBalance(t.http, token, account.uuid, 100);
    const other = await openAccount(t.http, token, client.appId, await createOwner(t.http, token));
    const transfer = transferBody(account.uuid, other.cvu, 10); // to an account of this service: internal

    await proxy.cut();
    const answers = [
      await request(t.http).get('/v1/users/all').set('Authorization', bearer(token)),
      await request(t.http)
        .get(`/v1/wallet/accounts/${account.uuid}/balance`)
        .set('Authorization', bearer(token)),
      await postTransfer(t.http, token, transfer, 'outage-key-1'),
    ];
    for (const answer of answers) expect503(answer);

    await proxy.restore();
    const again = await postTransfer(t.http, token, transfer, 'outage-key-1');
    expect(again.status).toBe(201);
    expect(await balanceOf(t.http, token, account.uuid)).toBe(90); // the transfer, once
  });

  it('keeps a document whose COMMIT was carried out but its answer lost, and answers 201', async () => {
    const client = await registerClient(t.app, 'lost commit');
    const token = await accessToken(t.http, client);
    const owner = await createOwner(t.http, token);
    // PostgreSQL's simple Query message for COMMIT: 'Q', the length (4 + 7), "COMMIT" and its NUL.
    proxy.loseAnswerTo(Buffer.from('Q\0\0\0\x0bCOMMIT\0', 'latin1'));
    const response = await uploadFront(t, token, owner);
    expect(response.status).toBe(201);
    const content = await request(t.http)
      .get(`/v1/documents/${response.body.uuid}/content`)
      .set('Authorization', bearer(token));
    expect(content.status).toBe(200);
    expect(Buffer.compare(content.body as Buffer, PNG)).toBe(0);
    const rows = (await t.dataSource.query('SELECT count(*)::int AS n FROM documents WHERE owner_id = $1', [
      owner,
    ])) as { n: number }[];
    expect(rows[0].n).toBe(1);
  });

  describe('a money call whose connection is lost (decision 0066)', () => {
    /** The test's own connection to the database, not through the proxy. */
    let direct: pg.Client;
    let token: string;
    let appId: string;

    beforeAll(async () => {
      direct = new pg.Client({ connectionString: database.url });
      await direct.connect();
      const client = await registerClient(t.app, 'lost calls');
      appId = client.appId;
      token = await accessToken(t.http, client);
    });
    afterAll(async () => {
      await direct?.end();
    });

    const open = async (balance = 0): Promise<AccountInfo> => {
      const account = await openAccount(t.http, token, appId, await createOwner(t.http, token));
      if (balance > 0) await setBalance(t.http, token, account.uuid, balance);
      return account;
    };
    const get = (uuid: string) =>
      request(t.http).get(`/v1/wallet/transactions/${uuid}`).set('Authorization', bearer(token));
    const transfersOf = async (accountId: string): Promise<string[]> =>
      (
        await direct.query<{ id: string }>(`SELECT id FROM transfers WHERE account_id = $1 ORDER BY id`, [
          accountId,
        ])
      ).rows.map((row) => row.id);
    const cents = (value: number) => Math.round(value * 100);
    /** A request sent now (supertest sends when the test is awaited or then'd). */
    const started = (test: request.Test): Promise<request.Response> => test.then((response) => response);
    /** A marker the proxy finds in the call's bytes (the request's summary or reason travels in them). */
    const marker = (name: string) => `${name}-${randomUUID()}`;

    /**
     * The CreateTransactionResponse text a creation answers, built from the same transfer's TransactionInfo (a
     * GET) as the interface relates them, in the order the API writes it: TransactionInfo's keys without `amount`
     * and `createdAt`, then `amount` as {value, currency}, `movementType`, `created`.
     */
    const createdText = ({ amount, createdAt, ...info }: Record<string, unknown>): string =>
      JSON.stringify({
        ...info,
        amount: { value: amount, currency: info.currency },
        movementType: info.type,
        created: createdAt,
      });
    const ledgerOk = async () => expect((await t.app.get(LedgerService).verify()).ok).toBe(true);
    /**
     * A transfer of 10 from `sender` to `receiver` whose call meets the proxy's `fault`, armed on a marker in its
     * summary: the answer, once the fault has happened.
     */
    const sendThrough = async (
      fault: 'cutAtAnswerTo' | 'cutBefore' | 'loseAnswerTo',
      sender: AccountInfo,
      receiver: AccountInfo,
    ): Promise<request.Response> => {
      const summary = marker(fault);
      const armed = proxy[fault](Buffer.from(summary));
      const response = await postTransfer(
        t.http,
        token,
        transferBody(sender.uuid, receiver.cvu, 10, { summary }),
      );
      expect(armed.fired).toBe(true);
      return response;
    };
    /** Nothing written for a transfer between the two: neither has a transfer, the balances are as funded. */
    const expectNothingWritten = async (sender: AccountInfo, receiver: AccountInfo) => {
      expect(await transfersOf(sender.uuid)).toEqual([]);
      expect(await transfersOf(receiver.uuid)).toEqual([]);
      expect(await balanceOf(t.http, token, sender.uuid)).toBe(100);
      expect(await balanceOf(t.http, token, receiver.uuid)).toBe(0);
      await ledgerOk();
    };

    it('a transfer without Idempotency-Key whose call committed but whose answer was cut answers 201, as a GET of it reads; one transfer, the money moved once', async () => {
      const sender = await open(100);
      const receiver = await open();
      // The control: a normal creation answers what createdText builds from its GET, byte for byte.
      const normal = await postTransfer(t.http, token, transferBody(sender.uuid, receiver.cvu, 5));
      expect(normal.status).toBe(201);
      expect(normal.text).toBe(createdText((await get(normal.body.uuid)).body));

      const response = await sendThrough('cutAtAnswerTo', sender, receiver);
      expect(response.status).toBe(201);
      const read = await get(response.body.uuid);
      expect(read.status).toBe(200);
      expect(response.text).toBe(createdText(read.body));
      expect(response.body).toMatchObject({ status: 'ACREDITADO', amount: { value: 10 } });
      expect(await transfersOf(sender.uuid)).toEqual([normal.body.uuid, response.body.uuid].sort());
      expect(await transfersOf(receiver.uuid)).toHaveLength(2);
      const spent = (body: { amount: { value: number }; fees: number; taxes: number }) =>
        cents(body.amount.value) + cents(body.fees) + cents(body.taxes);
      expect(cents(await balanceOf(t.http, token, sender.uuid))).toBe(
        cents(100) - spent(normal.body) - spent(response.body),
      );
      expect(cents(await balanceOf(t.http, token, receiver.uuid))).toBe(
        cents(15) - cents(normal.body.taxes) - cents(response.body.taxes),
      );
      await ledgerOk();
    });

    it('a group whose answer was cut: each request answers its own truth (written: 201 as a GET reads it; refused or replayed: 503, and a retry answers what it would have)', async () => {
      const receiver = await open();
      const [first, plain, keyed, external, replayed] = await Promise.all([
        open(100),
        open(100),
        open(100),
        open(100),
        open(100),
      ]);
      const poor = await open(1);
      const usedKey = `lost-group-used-${randomUUID()}`;
      const replayBody = transferBody(replayed.uuid, receiver.cvu, 7);
      const stored = await postTransfer(t.http, token, replayBody, usedKey);
      expect(stored.status).toBe(201);

      // The receiver's ledger row held from another connection: the first call waits on it, and the requests
      // sent meanwhile queue in the batcher and go together in the next call (decision 0015's test does the same).
      await direct.query('BEGIN');
      await direct.query('SELECT 1 FROM ledger_accounts WHERE id = $1 FOR UPDATE', [receiver.uuid]);
      const firstSent = started(postTransfer(t.http, token, transferBody(first.uuid, receiver.cvu, 10)));
      await pollValue(
        async () => t.app.get(TransferBatcher).load().calls,
        (calls) => calls === 1,
      );
      const summary = marker('group-cut');
      const fault = proxy.cutAtAnswerTo(Buffer.from(summary));
      const keyedKey = `lost-group-${randomUUID()}`;
      const keyedBody = transferBody(keyed.uuid, receiver.cvu, 11, { summary });
      const sent = [
        postTransfer(t.http, token, transferBody(plain.uuid, receiver.cvu, 10, { summary })),
        postTransfer(t.http, token, keyedBody, keyedKey),
        postTransfer(t.http, token, transferBody(poor.uuid, receiver.cvu, 10, { summary })), // refused: funds
        postTransfer(t.http, token, replayBody, usedKey), // replays the stored answer
        postTransfer(t.http, token, transferBody(external.uuid, DIRECTORY.nacion.number, 12, { summary })),
      ].map(started);
      expect(
        await pollValue(
          async () => t.app.get(TransferBatcher).load(),
          (load) => load.waiting === 5,
        ),
      ).toEqual({ waiting: 5, calls: 1, transfers: 1 });
      await direct.query('COMMIT');
      expect((await firstSent).status).toBe(201);
      const [plainSent, keyedSent, poorSent, replaySent, externalSent] = await Promise.all(sent);
      expect(fault.fired).toBe(true);

      for (const response of [plainSent, keyedSent, externalSent]) {
        expect(response.status).toBe(201);
        expect(response.text).toBe(createdText((await get(response.body.uuid)).body));
      }
      expect(externalSent.body).toMatchObject({ status: 'INICIADO', amount: { value: 12 } });
      // The three were written by one transaction: the group's call.
      const [together] = (
        await direct.query<{ n: number }>(
          `SELECT count(DISTINCT xmin::text)::int AS n FROM transfers WHERE id = ANY ($1::uuid[])`,
          [[plainSent.body.uuid, keyedSent.body.uuid, externalSent.body.uuid]],
        )
      ).rows;
      expect(together.n).toBe(1);
      // The key's stored answer, written by the function, is the same text the lost call answered from the rows.
      const keyedAgain = await postTransfer(t.http, token, keyedBody, keyedKey);
      expect(keyedAgain.status).toBe(201);
      expect(keyedAgain.text).toBe(keyedSent.text);

      // Nothing was written for the refused one nor for the replay: 503, and a retry answers what the call would
      // have (the refusal; the stored answer).
      expect503(poorSent);
      expect503(replaySent);
      const poorAgain = await postTransfer(t.http, token, transferBody(poor.uuid, receiver.cvu, 10));
      expect(poorAgain.status).toBe(400);
      expect(poorAgain.body.detail.items).toEqual([
        { path: 'amount', type: 'invalid', message: expect.stringMatching(/insufficient funds/) },
      ]);
      const replayAgain = await postTransfer(t.http, token, replayBody, usedKey);
      expect(replayAgain.status).toBe(201);
      expect(replayAgain.text).toBe(stored.text);

      expect(await transfersOf(poor.uuid)).toEqual([]);
      expect(await transfersOf(replayed.uuid)).toEqual([stored.body.uuid]);
      for (const [account, response] of [
        [plain, plainSent],
        [keyed, keyedSent],
        [external, externalSent],
      ] as const) {
        expect(await transfersOf(account.uuid)).toEqual([response.body.uuid]);
        expect(await balanceOf(t.http, token, account.uuid)).toBe(100 - response.body.amount.value);
      }
      expect(await balanceOf(t.http, token, poor.uuid)).toBe(1);
      expect(await balanceOf(t.http, token, receiver.uuid)).toBe(10 + 10 + 11 + 7);
      await ledgerOk();
    });

    it('a call cut before it reached the server answers 503, and nothing was written', async () => {
      const sender = await open(100);
      const receiver = await open();
      expect503(await sendThrough('cutBefore', sender, receiver));
      await expectNothingWritten(sender, receiver);
    });

    it('a call that reached the server and waits there when its connection is lost is ended: 503, and nothing is written once what it waited for is released', async () => {
      const sender = await open(100);
      const receiver = await open();
      await direct.query('BEGIN');
      await direct.query('SELECT 1 FROM ledger_accounts WHERE id = $1 FOR UPDATE', [receiver.uuid]);
      // The call reaches the server and waits for the row; the client's side is reset at once, the server's
      // left open: without an end, the backend would go on and commit once the row is free.
      const response = await sendThrough('loseAnswerTo', sender, receiver);
      await direct.query('COMMIT');
      expect503(response);
      // Whatever still runs a transfer call in this database (the lost call's backend, had it not been ended)
      // finishes before the rows are counted.
      const running = await pollValue(
        async () =>
          (
            await direct.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'
                  AND query LIKE '%wallet_create_transfers%'`,
            )
          ).rows[0].n,
        (n) => n === 0,
      );
      expect(running).toBe(0);
      await expectNothingWritten(sender, receiver);
    });

    /** A settled internal transfer of 20 from a sender funded with 100: `d`, the receiver's DEPOSIT, to reverse. */
    const settledForReversal = async () => {
      const sender = await open(100);
      const receiver = await open();
      const original = await postTransfer(t.http, token, transferBody(sender.uuid, receiver.cvu, 20));
      expect(original.status).toBe(201);
      const [{ d }] = (
        await direct.query<{ d: string }>(`SELECT linked_transfer_id AS d FROM transfers WHERE id = $1`, [
          original.body.uuid,
        ])
      ).rows;
      return { sender, receiver, d };
    };
    /** A reversal of 5 of `d`, without an Idempotency-Key. */
    const reverse = (d: string, reason: string) =>
      request(t.http)
        .post(`/v1/wallet/transactions/${d}/reversals`)
        .set('Authorization', bearer(token))
        .send({ amount: 5, reason });
    /** The reversal's answer is, byte for byte, its GET with `reversalOf`. */
    const expectAnswerAsRead = async (response: request.Response, d: string) => {
      const read = await get(response.body.uuid);
      expect(response.text).toBe(JSON.stringify({ ...read.body, reversalOf: d }));
    };

    it('a reversal whose answer was cut answers 201 with the reversal, once', async () => {
      const { sender, receiver, d } = await settledForReversal();
      const reason = marker('reversal-cut');
      const fault = proxy.cutAtAnswerTo(Buffer.from(reason));
      const response = await reverse(d, reason);
      expect(fault.fired).toBe(true);
      expect(response.status).toBe(201);
      await expectAnswerAsRead(response, d);
      const reversals = await request(t.http)
        .get(`/v1/wallet/transactions/${d}/reversals`)
        .set('Authorization', bearer(token));
      expect(reversals.body).toMatchObject({ reversed: 5, left: 15 });
      expect(reversals.body.reversals).toEqual([response.body]);
      expect(await balanceOf(t.http, token, receiver.uuid)).toBe(15);
      expect(await balanceOf(t.http, token, sender.uuid)).toBe(85);
      await ledgerOk();
    });

    it('a reversal is answered from its call alone: with any later statement that names its counterparty cut, it answers 201, once (decision 0088)', async () => {
      const { sender, receiver, d } = await settledForReversal();
      // The reversal of the receiver's DEPOSIT names the sender's account as its counterparty; the call itself does
      // not carry that id. The answer used to read that account's owner after the call committed (decision 0086):
      // the first statement naming it after the call is cut before it reaches the server.
      const fault = proxy.cutBefore(Buffer.from(sender.uuid));
      const first = await reverse(d, 'refund part');
      // A client told 503 ("try again shortly") may retry without an Idempotency-Key, which is optional.
      const answers = first.status === 503 ? [first, await reverse(d, 'refund part')] : [first];
      proxy.disarm();
      expect({ statuses: answers.map((answer) => answer.status), cut: fault.fired }).toEqual({
        statuses: [201],
        cut: false,
      });
      const written = await direct.query<{ id: string }>(`SELECT id FROM transfers WHERE reversal_of = $1`, [
        d,
      ]);
      expect(written.rows.map((row) => row.id)).toEqual([first.body.uuid]);
      await expectAnswerAsRead(first, d);
      expect(await balanceOf(t.http, token, receiver.uuid)).toBe(15);
      expect(await balanceOf(t.http, token, sender.uuid)).toBe(85);
      await ledgerOk();
    });
  });

  describe('a KYC answer is read before the commit (decision 0088)', () => {
    let token: string;
    let owner: string;
    beforeAll(async () => {
      const client = await registerClient(t.app, 'kyc answers');
      token = await accessToken(t.http, client);
      owner = await createOwner(t.http, token);
    });
    const sessionsOf = async (ownerId: string) =>
      (
        (await t.dataSource.query('SELECT id FROM kyc_sessions WHERE owner_id = $1', [ownerId])) as {
          id: string;
        }[]
      ).map((row) => row.id);
    const start = () =>
      request(t.http)
        .post('/v1/kyc/sessions')
        .set('Authorization', bearer(token))
        .send({ ownerType: 'USER', ownerId: owner });
    const read = (id: string) =>
      request(t.http).get(`/v1/kyc/sessions/${id}`).set('Authorization', bearer(token));

    it('a session whose read for the answer is cut is not made (503), and the retry makes one', async () => {
      // The first statement that reads a session (TypeORM's select names the table and its entity) is cut before
      // it reaches the server. The answer's read came after the commit: it answered 503 for a session that was
      // made, and the retry made a second. Now it is in the transaction, which the cut rolls back.
      const fault = proxy.cutBefore(Buffer.from('FROM "kyc_sessions" "KycSessionEntity"'));
      const first = await start();
      expect(fault.fired).toBe(true);
      expect(first.status).toBe(503);
      expect(await sessionsOf(owner)).toEqual([]);
      const retry = await start();
      expect(retry.status).toBe(201);
      expect(await sessionsOf(owner)).toEqual([retry.body.uuid]);
      expect(retry.text).toBe((await read(retry.body.uuid)).text);
    });

    it('a submitted step is answered without a read after its commit: a cut read of the session answers no 503', async () => {
      const session = (await start()).body.uuid as string;
      const document = await uploadFront(t, token, owner);
      expect(document.status).toBe(201);
      const submit = () =>
        request(t.http)
          .post(`/v1/kyc/sessions/${session}/steps/DOCUMENT_FRONT`)
          .set('Authorization', bearer(token))
          .send({ documentUuid: document.body.uuid });
      // The session as a GET reads it, by id and application without a lock (the step's own transaction locks it:
      // its statement ends in FOR UPDATE), is cut before it reaches the server: the read the answer once made
      // after the commit, which answered 503 for a step submitted, and the retry was refused as already submitted.
      const fault = proxy.cutBefore(Buffer.from('"app_id" = $2)) LIMIT 1\0', 'latin1'));
      const first = await submit();
      const answers = first.status === 503 ? [first, await submit()] : [first];
      proxy.disarm();
      expect({ statuses: answers.map((answer) => answer.status), cut: fault.fired }).toEqual({
        statuses: [202],
        cut: false,
      });
      expect(first.body).toMatchObject({ status: 'IN_PROGRESS' });
      const [front] = (await t.dataSource.query(
        `SELECT submitted_at IS NOT NULL AS submitted FROM kyc_session_steps WHERE session_id = $1 AND step = 'DOCUMENT_FRONT'`,
        [session],
      )) as { submitted: boolean }[];
      expect(front.submitted).toBe(true);
    });
  });

  describe('ending the backend of a lost call (real PostgreSQL)', () => {
    /**
     * Two connections of the service's pool as production makes it (DATABASE_URL, the DataSource's pool config with
     * its onConnect hook), as `role`, or as the test server's superuser: the first stands for the lost call's.
     */
    const pair = async (url: string) => {
      const pool = new pg.Pool({
        ...dataSourceOptions(url, 2, 'lost-call-backends').extra,
        connectionString: url,
      });
      const lost = await pool.connect();
      const other = await pool.connect();
      return { pool, lost, other };
    };
    const alive = (client: pg.ClientBase) =>
      client.query('SELECT 1').then(
        () => true,
        () => false,
      );

    it('ends the backend named by pid and start, and leaves one whose start differs (a pid reused)', async () => {
      const { pool, lost, other } = await pair(database.url);
      try {
        const backend = backendOf(lost)!;
        expect(backend).toEqual({ pid: expect.any(Number), started: expect.stringMatching(/^\d+\.\d+$/) });
        const [whole, fraction] = backend.started.split('.');
        // Another backend that got the same pid after a restart started at another time: not the lost one.
        const reused = { pid: backend.pid, started: `${Number(whole) - 1}.${fraction}` };
        expect(await endBackend(other, reused, 2_000)).toBe(true); // the backend so named is not there
        expect(await alive(lost)).toBe(true);
        expect(await endBackend(other, backend, 5_000)).toBe(true);
        expect(await alive(lost)).toBe(false);
        // Gone: asked again, it is not there.
        expect(await endBackend(other, backend, 1_000)).toBe(true);
      } finally {
        lost.release(true);
        other.release();
        await pool.end();
      }
    });

    it('a role that is not a superuser reads its backends when it connects and ends its own lost one', async () => {
      const role = `lost_call_${randomUUID().slice(0, 8)}`;
      const password = randomUUID();
      const admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
      await admin.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER PASSWORD '${password}'`);
      const url = new URL(database.url);
      url.username = role;
      url.password = password;
      try {
        const { pool, lost, other } = await pair(url.toString());
        try {
          const [{ superuser }] = (
            await other.query<{ superuser: boolean }>(
              `SELECT rolsuper AS superuser FROM pg_roles WHERE rolname = current_user`,
            )
          ).rows;
          expect(superuser).toBe(false);
          const backend = backendOf(lost)!;
          expect(backend.pid).toBe(
            (await lost.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid,
          );
          expect(await endBackend(other, backend, 5_000)).toBe(true);
          expect(await alive(lost)).toBe(false);
        } finally {
          lost.release(true);
          other.release();
          await pool.end();
        }
      } finally {
        await admin.query(`DROP ROLE ${role}`);
        await admin.end();
      }
    });
  });
});
