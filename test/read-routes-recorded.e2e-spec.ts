import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import { ReversalsService } from '../src/modules/transfers/reversals.service.js';
import { TransfersService } from '../src/modules/transfers/transfers.service.js';
import { subjectToken } from './support/auth.js';
import { bearer, companyBody, cuitDigit, userBody } from './support/identity.js';
import { canonicalTies, maskAnswers, type Answer, type Issued } from './support/recorded-answers.js';
import type { TestApp } from './support/test-app.js';
import { pollValue } from './support/poll.js';
import {
  counterParty,
  DIRECTORY,
  postTransfer,
  setFees,
  setLimits,
  transferBody,
} from './support/transfers.js';
import { startWithTwoApplications } from './support/two-applications.js';
import { openAccount, setBalance, type AccountInfo } from './support/wallet.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

/**
 * Every read route that shows money, transfers or operated amounts answers byte for byte as the code before
 * docs/decisions/0035-write-each-fact-once.md did (commit ffa3468), on a recorded, deterministic workload: the
 * answers, masked where a run draws at random (test/support/recorded-answers.ts), are compared with
 * test/fixtures/read-routes-recorded.json. `RECORD_READ_ROUTES=1` writes that file instead of comparing (run it
 * on the commit whose answers are the reference). One edit since: the API's start records the development
 * signing key (decision 0032, amended), so every audit record id of the recording was moved up by one, by a
 * script, and nothing else (this run's answers differed from the recording in exactly those ids).
 * Recorded again on 2026-12-02 for decision 0013's amendment (a failed transfer's taxes and fees are 0, what it
 * applied): the one ERROR_DATOS transfer's `taxes` went from 0.06 to 0 in the 5 answers that show it, and nothing
 * else changed. Edited by a script for decision 0082 (an application is shown an operator's command as `cli` /
 * `operator`, not the OS user): the 13 audit records of `cli` principals went from `<os-user>` to `operator`.
 * Recorded again on 2026-12-02 for decision 0084 (a statement line names its own account's transaction): the
 * `reference` of the credit lines of internal transfers and reversals (24 values in 15 statement answers: 14 in
 * JSON, 10 in CSV) went from the other side's WITHDRAW to the account's own DEPOSIT, and nothing else changed.
 */

const FIXTURE = path.resolve('test/fixtures/read-routes-recorded.json');
const RECORD = process.env.RECORD_READ_ROUTES === '1';

/** A valid CUIT/CUIL from a fixed number: the run's tax ids are the same every time. */
function fixedCuit(prefix: string, n: number): string {
  for (let k = n; ; k++) {
    const first10 = `${prefix}${String(k).padStart(8, '0')}`;
    const digit = cuitDigit(first10);
    if (digit !== undefined) return `${first10}${digit}`;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Ordered {
  table: 'transfers' | 'webhook_events';
  direction: 'asc' | 'desc';
  id: (row: unknown) => string;
}
const TRANSFERS_NEWEST_FIRST: Ordered = {
  table: 'transfers',
  direction: 'desc',
  id: (row) => (row as { uuid: string }).uuid,
};
const EVENTS_OLDEST_FIRST: Ordered = {
  table: 'webhook_events',
  direction: 'asc',
  id: (row) => (row as { id: string }).id,
};

describe('read routes answer as recorded before the write-each-fact-once change', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  it('a recorded workload: every read route, application and user tokens, masked, equals the recording', async () => {
    /** The instants between the workload's steps (ms since the epoch), taken while nothing runs. */
    const timeline: number[] = [];
    const steps: Record<string, string> = {};
    const boundary = async () => {
      await sleep(5);
      timeline.push(Date.now());
      await sleep(5);
      return new Date(timeline[timeline.length - 1]).toISOString();
    };
    await boundary();
    const started = await startWithTwoApplications('reads', {
      runWorker: true,
      env: {
        CLEARING_SIM_DELAY_MS: '50',
        TRANSFER_TAX_RATE: '0.006',
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        WEBHOOK_SWEEP_INTERVAL_MS: '200',
      },
    });
    t = started.t;
    const { appA, appB, tokenA, tokenB } = started;
    const api = () => request(t.http);

    /** Waits until no transfer is in flight and every event is delivered: nothing of a step runs on. */
    const settle = async () => {
      const open = await pollValue(
        async () =>
          (
            (await t.dataSource.query(
              `SELECT (SELECT count(*) FROM transfers WHERE status IN ('COMMITING', 'INICIADO', 'EN_CURSO'))::int
                    + (SELECT count(*) FROM webhook_events WHERE status <> 'delivered')::int AS n`,
            )) as { n: number }[]
          )[0].n,
        (n) => n === 0,
        15_000,
      );
      expect(open).toBe(0);
    };
    /** One step of the workload: its work, all it sets off settled, then the instant that ends it. */
    const step = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
      const result = await work();
      await settle();
      await boundary();
      steps[String(timeline.length - 1)] = name;
      return result;
    };
    steps['1'] = 'two applications registered, their tokens';
    await boundary();
    // Every event is delivered (and so stops changing) before the next step.
    await step('their webhooks', async () => {
      for (const app of [appA, appB])
        await t.app.get(AppsService).setWebhook(app.appId, receiver.url(), cliActor('test'));
    });

    // ---- The workload ----------------------------------------------------------------------------------
    const issued: Issued = {
      cvus: [],
      aliases: [],
      keyIds: [appA.keyId, appB.keyId],
      osUser: os.userInfo().username,
    };
    const owner = (name: string, token: string, body: object, kind: 'users' | 'companies') =>
      step(name, async () => {
        const response = await api().post(`/v1/${kind}`).set('Authorization', bearer(token)).send(body);
        expect(response.status).toBe(201);
        return (response.body as { uuid: string }).uuid;
      });
    const open = (
      name: string,
      token: string,
      appId: string,
      ownerId: string,
      type: 'USER' | 'COMPANY' = 'USER',
    ) =>
      step(name, async () => {
        const account = await openAccount(t.http, token, appId, ownerId, type);
        issued.cvus.push(account.cvu);
        issued.aliases.push(account.alias);
        return account;
      });
    const cuitU1 = fixedCuit('20', 30_000_001);
    const cuitU2 = fixedCuit('27', 30_000_002);
    const cuitC = fixedCuit('30', 70_000_003);
    const cuitV = fixedCuit('20', 30_000_004);
    const userU1 = await owner('user U1 (A)', tokenA, userBody(cuitU1), 'users');
    const userU2 = await owner(
      'user U2 (A)',
      tokenA,
      { ...userBody(cuitU2), firstName: 'Lucía', lastName: 'Pérez' },
      'users',
    );
    const company = await owner('company C (A)', tokenA, companyBody(cuitC), 'companies');
    const userV = await owner(
      'user V (B)',
      tokenB,
      { ...userBody(cuitV), firstName: 'Pedro', lastName: 'Sosa' },
      'users',
    );
    const a1 = await open('account a1 of U1', tokenA, appA.appId, userU1);
    const a2 = await open('account a2 of U2', tokenA, appA.appId, userU2);
    const ac = await open('account ac of C', tokenA, appA.appId, company, 'COMPANY');
    const b1 = await open('account b1 of V', tokenB, appB.appId, userV);
    await step('limits of a1', () =>
      setLimits(t.http, tokenA, a1.uuid, {
        monthlyWithdrawLimit: 5_000,
        monthlyDepositLimit: 6_000,
        annualWithdrawLimit: 50_000,
        annualDepositLimit: 60_000,
      }),
    );
    await step('limits of ac', () =>
      setLimits(t.http, tokenA, ac.uuid, {
        monthlyWithdrawLimit: 20_000,
        monthlyDepositLimit: 20_000,
        annualWithdrawLimit: 200_000,
        annualDepositLimit: 200_000,
      }),
    );
    await step('fee of a1: FIXED 2.5', () => setFees(t.http, tokenA, a1.uuid, 'FIXED', 2.5));
    await step('fee of ac: PERCENTAGE 1.5', () => setFees(t.http, tokenA, ac.uuid, 'PERCENTAGE', 1.5));
    await step('balance of a1: 1000', () => setBalance(t.http, tokenA, a1.uuid, 1000));
    await step('balance of a2: 200', () => setBalance(t.http, tokenA, a2.uuid, 200));
    await step('balance of ac: 5000', () => setBalance(t.http, tokenA, ac.uuid, 5000));
    const beforeTransfers = new Date(timeline[timeline.length - 1]).toISOString();

    const userTokenU1 = await subjectToken(appA, userU1);
    const userTokenU2 = await subjectToken(appA, userU2);
    const companyToken = await subjectToken(appA, company);
    const userTokenV = await subjectToken(appB, userV);

    /** A transfer (201 expected) as one step; returns its uuid. */
    const send = (name: string, token: string, body: object) =>
      step(name, async () => {
        const response = await postTransfer(t.http, token, body);
        expect(response.status).toBe(201);
        return (response.body as { uuid: string }).uuid;
      });
    const internal = (
      from: AccountInfo,
      to: AccountInfo,
      amount: number,
      cuit: string,
      name: string,
      summary?: string,
    ) =>
      transferBody(from.uuid, to.cvu, amount, {
        counterParty: counterParty(to.cvu, cuit, name),
        ...(summary ? { summary } : {}),
      });
    const depositSide = async (withdraw: string): Promise<string> =>
      (
        (await t.dataSource.query(`SELECT linked_transfer_id::text AS d FROM transfers WHERE id = $1`, [
          withdraw,
        ])) as { d: string }[]
      )[0].d;

    const t1 = await send(
      't1: a1 → a2 100 (fee 2.5)',
      tokenA,
      internal(a1, a2, 100, cuitU2, 'Lucía Pérez', 'alquiler'),
    );
    const t2 = await send('t2: a2 → a1 30', tokenA, internal(a2, a1, 30, cuitU1, 'María González'));
    const t3 = await send(
      't3: ac → a1 250 (company, fee 1.5 %)',
      tokenA,
      internal(ac, a1, 250, cuitU1, 'María González', 'honorarios'),
    );
    const t4 = await send(
      't4: a1 → b1 120 (to application B)',
      tokenA,
      internal(a1, b1, 120, cuitV, 'Pedro Sosa'),
    );
    const t5 = await send(
      "t5: a2 → ac 15.5 (U2's own token)",
      userTokenU2,
      internal(a2, ac, 15.5, cuitC, 'Yerba Sur S.R.L.'),
    );
    const betweenTransfers = new Date(timeline[timeline.length - 1]).toISOString();
    const external = (
      account: AccountInfo,
      amount: number,
      movementType: 'WITHDRAW' | 'DEPOSIT',
      to: { number: string; cuit: string } = DIRECTORY.nacion,
    ) =>
      transferBody(account.uuid, to.number, amount, {
        movementType,
        counterParty: counterParty(to.number, to.cuit, 'Cuenta de prueba'),
      });
    const x1 = await send('x1: a1 external WITHDRAW 80, ACREDITADO', tokenA, external(a1, 80, 'WITHDRAW'));
    const x2 = await send('x2: a2 external DEPOSIT 60, ACREDITADO', tokenA, external(a2, 60, 'DEPOSIT'));
    const x3 = await send(
      'x3: a2 external WITHDRAW 10, ERROR_DATOS',
      tokenA,
      external(a2, 10, 'WITHDRAW', DIRECTORY.errorDatos),
    );
    const inbound = await step('inbound 333.33 into ac (as the CLI)', () =>
      t.app.get(TransfersService).inbound(
        {
          cvu: ac.cvu,
          amount: 333.33,
          fromIdentifier: DIRECTORY.nacion.number,
          fromName: DIRECTORY.nacion.name,
          fromTaxId: DIRECTORY.nacion.cuit,
          concept: 'HON',
        },
        cliActor('transfers inbound'),
      ),
    );
    const t4deposit = await depositSide(t4);
    const reversal = await step('reversal of 20 of t4 by B', async () => {
      const response = await api()
        .post(`/v1/wallet/transactions/${t4deposit}/reversals`)
        .set('Authorization', bearer(tokenB))
        .send({ amount: 20, reason: 'devolución parcial' });
      expect(response.status).toBe(201);
      return (response.body as { uuid: string }).uuid;
    });
    const returned = await step('the rail returns 30 of x1 (as the CLI)', () =>
      t.app
        .get(ReversalsService)
        .returnFromRail(
          { transferId: x1, amount: '30', reason: 'cuenta cerrada' },
          cliActor('transfers return'),
        ),
    );
    const afterTransfers = new Date(timeline[timeline.length - 1]).toISOString();
    steps[String(timeline.length)] = 'the reads';
    const statuses = (await t.dataSource.query(
      `SELECT id::text, status FROM transfers WHERE id = ANY($1::uuid[])`,
      [[x1, x2, x3]],
    )) as { id: string; status: string }[];
    expect(Object.fromEntries(statuses.map((row) => [row.id, row.status]))).toStrictEqual({
      [x1]: 'ACREDITADO',
      [x2]: 'ACREDITADO',
      [x3]: 'ERROR_DATOS',
    });

    // ---- The reads --------------------------------------------------------------------------------------
    const answers: Answer[] = [];
    /** The X-Next-Cursor of each answer that had one (readPages follows it; its value is not recorded). */
    const cursors = new WeakMap<Answer, string>();
    const target = (route: string, query: Record<string, string | number>) => {
      const text = Object.entries(query)
        .map(([key, value]) => `${key}=${value}`)
        .join('&');
      return text ? `${route}?${text}` : route;
    };
    const timesOf = async (ordered: Ordered, ids: string[]) =>
      new Map(
        (
          (await t.dataSource.query(
            `SELECT id::text AS id, (extract(epoch FROM created_at) * 1000000)::bigint::text AS us
               FROM ${ordered.table} WHERE id = ANY($1::uuid[])`,
            [ids],
          )) as { id: string; us: string }[]
        ).map((row) => [row.id, row.us]),
      );
    /** One GET (or a POST that reads), recorded as answered. */
    const read = async (
      name: string,
      token: string,
      route: string,
      options: {
        query?: Record<string, string | number>;
        accept?: string;
        body?: object;
        ordered?: Ordered;
      } = {},
    ) => {
      const query = options.query ?? {};
      const test = options.body ? api().post(route).send(options.body) : api().get(route).query(query);
      test.set('Authorization', bearer(token));
      if (options.accept) test.set('Accept', options.accept);
      const response = await test;
      const cursor = response.headers['x-next-cursor'] as string | undefined;
      const answer: Answer = {
        name,
        request: `${options.body ? 'POST' : 'GET'} ${target(route, query)}${options.body ? ` ${JSON.stringify(options.body)}` : ''}`,
        status: response.status,
        contentType: String(response.headers['content-type'] ?? ''),
        next: cursor !== undefined,
        body: response.text,
      };
      if (options.ordered && response.status === 200) {
        const { pages, ties } = await canonical([answer.body], options.ordered);
        answer.body = pages[0];
        if (ties) answer.ties = ties;
      }
      answers.push(answer);
      if (cursor !== undefined) cursors.set(answer, cursor);
      return answer;
    };
    /** The tied rows of a list's pages in canonical order (recorded-answers.ts canonicalTies), as text again. */
    const canonical = async (bodies: string[], ordered: Ordered) => {
      const pages = bodies.map((body) => JSON.parse(body) as unknown[]);
      // Only a body that is exactly its parse, serialized again, can be reordered without changing a byte else.
      for (let i = 0; i < pages.length; i++) expect(JSON.stringify(pages[i])).toBe(bodies[i]);
      const times = await timesOf(ordered, pages.flat().map(ordered.id));
      const result = canonicalTies(pages, ordered.id, times, ordered.direction, issued);
      return { pages: result.pages.map((page) => JSON.stringify(page)), ties: result.ties };
    };
    /** Every page of a list, following X-Next-Cursor (`cursor`, or `after` for the events feed and the audit). */
    const readPages = async (
      name: string,
      token: string,
      route: string,
      query: Record<string, string | number>,
      ordered?: Ordered,
      cursorName = 'cursor',
    ) => {
      const first = answers.length;
      let cursor: string | undefined;
      for (let page = 1; ; page++) {
        expect(page).toBeLessThan(50);
        const answer = await read(`${name}, page ${page}`, token, route, {
          query: { ...query, ...(cursor ? { [cursorName]: cursor } : {}) },
        });
        answer.request = `GET ${target(route, query)} (page ${page})`;
        expect(answer.status).toBe(200);
        cursor = cursors.get(answer);
        if (cursor === undefined) break;
      }
      if (ordered) {
        const mine = answers.slice(first);
        const { pages, ties } = await canonical(
          mine.map((answer) => answer.body),
          ordered,
        );
        mine.forEach((answer, i) => (answer.body = pages[i]));
        if (ties) mine[0].ties = ties;
      }
    };

    // Each account as its application sees it and as its owner does; the loops below read a route for all of them
    // or for some (in this order).
    const VIEWS = [
      ['a1', a1, tokenA],
      ['a2', a2, tokenA],
      ['ac', ac, tokenA],
      ['a1, its owner', a1, userTokenU1],
      ['a2, its owner', a2, userTokenU2],
      ['ac, its company', ac, companyToken],
      ['b1', b1, tokenB],
      ['b1, its owner', b1, userTokenV],
    ] as const;
    const views = (...labels: (typeof VIEWS)[number][0][]) =>
      VIEWS.filter(([label]) => labels.includes(label));

    // Accounts, and the owners' views that embed them.
    for (const [label, account] of [
      ['a1 (user U1)', a1],
      ['a2 (user U2)', a2],
      ['ac (company)', ac],
    ] as const)
      await read(`account ${label}`, tokenA, `/v1/wallet/accounts/${account.uuid}`);
    await read('account a1, its owner', userTokenU1, `/v1/wallet/accounts/${a1.uuid}`);
    await read('account ac, its company', companyToken, `/v1/wallet/accounts/${ac.uuid}`);
    await read('account b1 (application B)', tokenB, `/v1/wallet/accounts/${b1.uuid}`);
    await read('account b1 from application A (not its own)', tokenA, `/v1/wallet/accounts/${b1.uuid}`);
    await read('user U1', tokenA, `/v1/users/${userU1}`);
    await read('user U2', tokenA, `/v1/users/${userU2}`);
    await read('user V (application B)', tokenB, `/v1/users/${userV}`);
    await read('company', tokenA, `/v1/companies/${company}`);
    await read('company, its own token', companyToken, `/v1/companies/${company}`);

    // Balances, now and at instants of the run.
    for (const [label, account, token] of VIEWS)
      await read(`balance ${label}`, token, `/v1/wallet/accounts/${account.uuid}/balance`);
    for (const [label, at] of [
      ['before the account existed', '2000-01-01T00:00:00Z'],
      ['before the transfers', beforeTransfers],
      ['between the internal and the external transfers', betweenTransfers],
      ['after the transfers', afterTransfers],
    ] as const) {
      await read(`balance a1 at an instant ${label}`, tokenA, `/v1/wallet/accounts/${a1.uuid}/balance`, {
        query: { at },
      });
      await read(`balance ac at an instant ${label}`, tokenA, `/v1/wallet/accounts/${ac.uuid}/balance`, {
        query: { at },
      });
    }
    await read('balance a1 at an instant, its owner', userTokenU1, `/v1/wallet/accounts/${a1.uuid}/balance`, {
      query: { at: betweenTransfers },
    });

    // Limits, fees, operated amounts.
    for (const [label, account, token] of views('a1', 'a2', 'ac', 'b1')) {
      await read(`limits ${label}`, token, `/v1/wallet/accounts/${account.uuid}/limits`);
      await read(`fees ${label}`, token, `/v1/wallet/accounts/${account.uuid}/fees`);
      await read(`operado ${label}`, token, `/v1/wallet/accounts/${account.uuid}/operado`);
      await read(`fulloperado ${label}`, token, `/v1/wallet/accounts/${account.uuid}/fulloperado`);
    }

    // The transaction lists.
    await read("application A's transactions", tokenA, '/v1/wallet/transactions/all', {
      ordered: TRANSFERS_NEWEST_FIRST,
    });
    await read("application B's transactions", tokenB, '/v1/wallet/transactions/all', {
      ordered: TRANSFERS_NEWEST_FIRST,
    });
    await readPages(
      "application A's transactions by 3",
      tokenA,
      '/v1/wallet/transactions/all',
      { limit: 3 },
      TRANSFERS_NEWEST_FIRST,
    );
    for (const [label, query] of [
      ['settled withdrawals', { status: 'ACREDITADO', movementType: 'WITHDRAW' }],
      ['deposits', { movementType: 'DEPOSIT' }],
      ['ERROR_DATOS', { status: 'ERROR_DATOS' }],
      ['of the internal transfers (from, to)', { from: beforeTransfers, to: betweenTransfers }],
    ] as const)
      await read(`application A's transactions, ${label}`, tokenA, '/v1/wallet/transactions/all', {
        query,
        ordered: TRANSFERS_NEWEST_FIRST,
      });
    for (const [label, account, token] of views('a1', 'a2', 'ac', 'a1, its owner', 'ac, its company', 'b1'))
      await read(`transactions of ${label}`, token, `/v1/wallet/accounts/${account.uuid}/transactions`, {
        ordered: TRANSFERS_NEWEST_FIRST,
      });
    await readPages(
      'transactions of a1 by 3',
      tokenA,
      `/v1/wallet/accounts/${a1.uuid}/transactions`,
      { limit: 3 },
      TRANSFERS_NEWEST_FIRST,
    );
    await read('transactions of a2, deposits', tokenA, `/v1/wallet/accounts/${a2.uuid}/transactions`, {
      query: { movementType: 'DEPOSIT' },
      ordered: TRANSFERS_NEWEST_FIRST,
    });

    // One transaction by uuid: both sides of internal transfers, the external ones, the reversal, the return.
    const t1deposit = await depositSide(t1);
    const t3deposit = await depositSide(t3);
    const reversalDeposit = await depositSide(reversal);
    for (const [label, uuid, token] of [
      ['t1 a1→a2, withdrawal', t1, tokenA],
      ['t1 a1→a2, deposit', t1deposit, tokenA],
      ['t1 a1→a2, withdrawal, its owner', t1, userTokenU1],
      ['t1 a1→a2, deposit, its owner', t1deposit, userTokenU2],
      ['t2 a2→a1, withdrawal', t2, tokenA],
      ['t3 ac→a1, withdrawal (company, PERCENTAGE fee)', t3, tokenA],
      ['t3 ac→a1, deposit', t3deposit, tokenA],
      ['t3 ac→a1, withdrawal, the company', t3, companyToken],
      ['t4 a1→b1, withdrawal (A)', t4, tokenA],
      ['t4 a1→b1, deposit (B)', t4deposit, tokenB],
      ['t4 a1→b1, deposit from A (not its own)', t4deposit, tokenA],
      ['t5 a2→ac by a user token', t5, tokenA],
      ['external WITHDRAW', x1, tokenA],
      ['external DEPOSIT', x2, tokenA],
      ['external WITHDRAW that failed', x3, tokenA],
      ['inbound', inbound.transferId, tokenA],
      ['reversal of t4, withdrawal (B)', reversal, tokenB],
      ['reversal of t4, deposit (A)', reversalDeposit, tokenA],
      ['return from the rail of the external WITHDRAW', returned.transferId, tokenA],
    ] as const)
      await read(`transaction ${label}`, token, `/v1/wallet/transactions/${uuid}`);

    // What was given back.
    for (const [label, uuid, token] of [
      ['t4 deposit (B)', t4deposit, tokenB],
      ['t4 deposit, its owner', t4deposit, userTokenV],
      ['t4 withdrawal (A)', t4, tokenA],
      ['the external WITHDRAW', x1, tokenA],
      ['the external WITHDRAW, its owner', x1, userTokenU1],
      ['t1 deposit (nothing given back)', t1deposit, tokenA],
    ] as const)
      await read(`reversals of ${label}`, token, `/v1/wallet/transactions/${uuid}/reversals`);

    // Statements.
    for (const [label, account, token] of views('a1', 'a2', 'ac', 'a1, its owner', 'b1')) {
      await read(`statement ${label}`, token, `/v1/wallet/accounts/${account.uuid}/statement`);
      await read(`statement ${label}, CSV`, token, `/v1/wallet/accounts/${account.uuid}/statement`, {
        accept: 'text/csv',
      });
    }
    await read(
      'statement a1 of the internal transfers (from, to)',
      tokenA,
      `/v1/wallet/accounts/${a1.uuid}/statement`,
      {
        query: { from: beforeTransfers, to: betweenTransfers },
      },
    );
    await read(
      'statement ac of the internal transfers (from, to), CSV',
      tokenA,
      `/v1/wallet/accounts/${ac.uuid}/statement`,
      {
        query: { from: beforeTransfers, to: betweenTransfers },
        accept: 'text/csv',
      },
    );
    await readPages('statement a1 by 3', tokenA, `/v1/wallet/accounts/${a1.uuid}/statement`, { limit: 3 });

    // Counterparty lookups of the run's accounts.
    await read('counterparty by CVU (a2)', tokenA, '/v1/counterparty', { body: { destinatario: a2.cvu } });
    await read('counterparty by alias (ac)', tokenA, '/v1/counterparty', {
      body: { destinatario: ac.alias },
    });

    // The events feed.
    await read("application A's events", tokenA, '/v1/events', { ordered: EVENTS_OLDEST_FIRST });
    await read("application B's events", tokenB, '/v1/events', { ordered: EVENTS_OLDEST_FIRST });
    await readPages(
      "application A's events by 4",
      tokenA,
      '/v1/events',
      { limit: 4 },
      EVENTS_OLDEST_FIRST,
      'after',
    );
    await read("application A's transfer_update events", tokenA, '/v1/events', {
      query: { type: 'transfer_update' },
      ordered: EVENTS_OLDEST_FIRST,
    });
    const [inboundEvent] = (await t.dataSource.query(
      `SELECT id::text AS id FROM webhook_events WHERE subject = $1`,
      [inbound.transferId],
    )) as { id: string }[];
    await read('the event of the inbound transfer', tokenA, `/v1/events/${inboundEvent.id}`);

    // The audit trail: the workload's changes (reads are not audited).
    await read("application A's audit records", tokenA, '/v1/audit', { query: { limit: 500 } });
    await read("application A's audit records of a1", tokenA, '/v1/audit', {
      query: { resource: a1.uuid, limit: 500 },
    });
    await read("application B's audit records", tokenB, '/v1/audit', { query: { limit: 500 } });
    await readPages(
      "application A's audit records by 10",
      tokenA,
      '/v1/audit',
      { limit: 10 },
      undefined,
      'after',
    );

    // ---- Masked, compared (or recorded) ---------------------------------------------------------------
    const masked = maskAnswers(answers, issued, timeline);
    const recording = { steps, answers: masked };
    const text = `${JSON.stringify(recording, null, 2)}\n`;
    if (RECORD) {
      mkdirSync(path.dirname(FIXTURE), { recursive: true });
      writeFileSync(FIXTURE, text);
    }
    const reference = JSON.parse(readFileSync(FIXTURE, 'utf8')) as typeof recording;
    const expected = reference.answers;
    // This run's answers, masked and as served, for a look when they differ.
    const actualFile = path.join(os.tmpdir(), 'read-routes-recorded.actual.json');
    writeFileSync(actualFile, text);
    writeFileSync(
      path.join(os.tmpdir(), 'read-routes-recorded.unmasked.json'),
      JSON.stringify(answers, null, 2),
    );
    const differences: string[] = [];
    if (JSON.stringify(reference.steps) !== JSON.stringify(steps))
      differences.push(
        `the workload's steps differ: ${JSON.stringify(reference.steps)} ≠ ${JSON.stringify(steps)}`,
      );
    const count = Math.max(expected.length, masked.length);
    for (let i = 0; i < count; i++) {
      const before = expected[i];
      const after = masked[i];
      if (!before || !after) {
        differences.push(`#${i}: ${before ? `only before: ${before.name}` : `only after: ${after.name}`}`);
        continue;
      }
      for (const field of ['name', 'request', 'status', 'contentType', 'next', 'ties', 'body'] as const) {
        const b = String(before[field]);
        const a = String(after[field]);
        if (a === b) continue;
        let at = 0;
        while (at < a.length && at < b.length && a[at] === b[at]) at++;
        const from = Math.max(0, at - 80);
        differences.push(
          `#${i} ${before.name} (${before.request}) ${field} differs at character ${at}:\n` +
            `  before: …${b.slice(from, at + 160)}\n  after:  …${a.slice(from, at + 160)}`,
        );
      }
    }
    if (differences.length)
      console.log(`this run's answers, masked: ${actualFile}\n${differences.join('\n')}`);
    expect(differences).toEqual([]);
    expect(masked.length).toBeGreaterThan(100);
  });
});
