import { spawn, type ChildProcess } from 'node:child_process';
import request from 'supertest';
import { canMove, type TransferStatus } from '../../src/modules/transfers/transfer-status.js';
import { LedgerService, systemAccountId } from '../../src/modules/wallet/ledger/ledger.service.js';
import type { TestClient } from './auth.js';
import { bearer, newCuit } from './identity.js';
import { ROOT, runCli, waitFor } from './processes.js';
import type { TestApp } from './test-app.js';
import {
  counterParty,
  DIRECTORY,
  setFees,
  setLimits,
  transferBody,
  UNLISTED_CBU,
  UNLISTED_CVU,
  type TransferBody,
} from './transfers.js';
import { createOwner, openAccount, setBalance } from './wallet.js';

/**
 * The seeded bank workload of test/bank-faults.e2e-spec.ts (issue 9), shared with the scale-out suite
 * (test/scale-out-faults.e2e-spec.ts): the operations, the Bank that runs them over HTTP against the test app
 * or several API processes, checks the invariant and the final state, and the process helpers of the fault
 * tests.
 */

export const SEED = Number(process.env.BANK_SEED ?? 20261123) >>> 0;
export const OPS = process.env.BANK_OPS ? Number(process.env.BANK_OPS) : undefined;
export const PLAIN_OPS = OPS ?? 240;
export const FAULT_OPS = OPS ?? 240;
export const CONCURRENCY = 6;
export const TAX_RATE_PER_MILLE = 6; // TRANSFER_TAX_RATE 0.006
export const FUNDING = 400;
export const backend = process.env.TEST_REDIS_URL ? 'redis' : 'postgres';
export { WORKER_JS } from './processes.js';
// (`npm run test:redis -- --testPathPatterns X` adds X to its own patterns: it would run every queue suite.)
export const REPLAY = `replay: BANK_SEED=${SEED}${OPS ? ` BANK_OPS=${OPS}` : ''}${
  backend === 'redis' ? ' TEST_QUEUE_BACKEND=redis' : ''
} npm test -- --testPathPatterns bank-faults`;

/** mulberry32: a small seeded PRNG (uniform in [0, 1)). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Rng {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  float(): number {
    return this.next();
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

// ---- money in integer cents, rounded half-even like the service ----

export const toCents = (value: number): number => Math.round(value * 100);
export const fromCents = (cents: number): number => cents / 100;

/** cents × numerator / denominator, rounded half-even to whole cents. */
export function ratioHalfEven(cents: number, numerator: number, denominator: number): number {
  const product = cents * numerator;
  const quotient = Math.floor(product / denominator);
  const rest = product - quotient * denominator;
  if (rest * 2 > denominator || (rest * 2 === denominator && quotient % 2 === 1)) return quotient + 1;
  return quotient;
}

// ---- the world ----

export interface External {
  label: string;
  number: string;
  cuit: string;
  verdict: 'ACREDITADO' | 'ERROR_DATOS' | 'SIN_GARANTIA' | 'ERROR_ACREDITACION';
}

/**
 * config/counterparty-directory.json accounts and two valid numbers it does not list, with the simulator's
 * verdict: any valid CBU/CVU settles ACREDITADO except the test accounts, which force their failure status.
 */
export const EXTERNALS: External[] = [
  { label: 'nacion', number: DIRECTORY.nacion.number, cuit: DIRECTORY.nacion.cuit, verdict: 'ACREDITADO' },
  { label: 'santander', number: '0720123900000009876545', cuit: '30712345671', verdict: 'ACREDITADO' },
  { label: 'mp-cvu', number: '0000076500000000000420', cuit: '27301234568', verdict: 'ACREDITADO' },
  {
    label: 'error-datos',
    number: DIRECTORY.errorDatos.number,
    cuit: DIRECTORY.errorDatos.cuit,
    verdict: 'ERROR_DATOS',
  },
  {
    label: 'sin-garantia',
    number: DIRECTORY.sinGarantia.number,
    cuit: DIRECTORY.sinGarantia.cuit,
    verdict: 'SIN_GARANTIA',
  },
  {
    label: 'error-acreditacion',
    number: DIRECTORY.errorAcreditacion.number,
    cuit: DIRECTORY.errorAcreditacion.cuit,
    verdict: 'ERROR_ACREDITACION',
  },
  { label: 'unlisted-cbu', number: UNLISTED_CBU, cuit: newCuit('20'), verdict: 'ACREDITADO' },
  { label: 'unlisted-cvu', number: UNLISTED_CVU, cuit: newCuit('27'), verdict: 'ACREDITADO' },
];

export interface Party {
  client: TestClient;
  token: string;
}

export interface Account {
  index: number;
  uuid: string;
  cvu: string;
  party: Party;
  fee: { type: 'NONE' | 'FIXED' | 'PERCENTAGE'; value: number };
}

export type Op =
  | { kind: 'internal'; from: number; to: number; amount: number; key?: string }
  | { kind: 'withdraw'; from: number; target: number; amount: number; key?: string }
  | { kind: 'deposit'; account: number; target: number; amount: number; key?: string }
  | { kind: 'overBalance'; from: number; to: number; amount: number; key: string }
  | { kind: 'badAmount'; from: number; to: number; amount: number; key: string }
  | { kind: 'race'; from: number; to: number; amount: number; key: string; copies: number }
  | { kind: 'replaySame'; of: number }
  | { kind: 'replayDiff'; of: number }
  | { kind: 'read'; account: number };

/** An accepted transfer as this test saw it (from its 201 answer). */
export interface Accepted {
  op: number;
  key?: string;
  uuid: string;
  route: 'INTERNAL' | 'EXTERNAL';
  movementType: 'WITHDRAW' | 'DEPOSIT';
  account: number;
  to?: number;
  target?: number;
  amountCents: number;
  feeCents: number;
  taxCents: number;
}

/** The seeded operation list (the same for a given seed and count). */
export function generateOps(seed: number, count: number, accounts: number, faults: boolean): Op[] {
  const rng = new Rng(seed);
  const ops: Op[] = [];
  const keyed = (i: number) => (faults || rng.chance(0.7) ? `bank-${seed}-${i}` : undefined);
  const amount = () =>
    rng.chance(0.15) ? (rng.int(1, 40) * 100 + rng.int(0, 99)) / 100 : rng.chance(0.05) ? 1 : rng.int(2, 220);
  const other = (from: number) => (from + rng.int(1, accounts - 1)) % accounts;
  const transferOps = () =>
    ops
      .map((op, i) => ({ op, i }))
      .filter(({ op }) => ['internal', 'withdraw', 'deposit'].includes(op.kind) && 'key' in op && op.key);
  for (let i = 0; i < count; i++) {
    const roll = rng.float();
    const from = rng.int(0, accounts - 1);
    if (roll < 0.3) ops.push({ kind: 'internal', from, to: other(from), amount: amount(), key: keyed(i) });
    else if (roll < 0.5)
      ops.push({
        kind: 'withdraw',
        from,
        target: rng.int(0, EXTERNALS.length - 1),
        amount: amount(),
        key: keyed(i),
      });
    else if (roll < 0.62)
      ops.push({
        kind: 'deposit',
        account: from,
        target: rng.int(0, EXTERNALS.length - 1),
        amount: rng.int(10, 300),
        key: keyed(i),
      });
    else if (roll < 0.67)
      ops.push({
        kind: 'overBalance',
        from,
        to: rng.chance(0.5) ? other(from) : -1 - rng.int(0, EXTERNALS.length - 1),
        amount: 5_000_000 + i,
        key: `bank-${seed}-${i}`,
      });
    else if (roll < 0.71)
      ops.push({
        kind: 'badAmount',
        from,
        to: other(from),
        amount: rng.pick([0, 0.001]),
        key: `bank-${seed}-${i}`,
      });
    else if (roll < 0.75)
      ops.push({
        kind: 'race',
        from,
        to: rng.chance(0.5) ? other(from) : -1 - rng.int(0, EXTERNALS.length - 1),
        amount: rng.int(1, 60),
        key: `bank-${seed}-${i}`,
        copies: rng.int(2, 5),
      });
    else if (roll < 0.85 && transferOps().length > 0) {
      const earlier = transferOps().slice(-12);
      ops.push({ kind: rng.chance(0.6) ? 'replaySame' : 'replayDiff', of: rng.pick(earlier).i });
    } else ops.push({ kind: 'read', account: from });
  }
  return ops;
}

// ---- the run ----

export interface Stats {
  ops: Record<string, number>;
  answers: Record<string, number>;
  retries: number;
  aborted: number;
  serverErrors: number;
  connectionErrors: number;
  invariantChecks: number;
  accepted: number;
  refused: number;
  faults: Record<string, number>;
  recoveredBySweep: number;
  /**
   * Races where a copy was refused for funds and a later one accepted (a hold released or a DEPOSIT credited
   * in between).
   */
  fundsThenAccepted: number;
  /** Final external transfers per counterparty and status (shows every verdict, the unlisted numbers too, ran). */
  externalFinals: Record<string, number>;
  /** Slowest answer to one attempt (an answer, not an abort), and how many took over 2 s. */
  slowestAnswerMs: number;
  answersOver2s: number;
  durationMs: number;
}

export interface Options {
  faults: boolean;
  /** API origins to spread the workload over, in turn (several processes); unset: the test app itself. */
  targets?: string[];
  /** Probability that an attempt is aborted by the client after a few ms. */
  abortChance: number;
}

export class Bank {
  readonly accounts: Account[] = [];
  readonly accepted: Accepted[] = [];
  readonly violations: string[] = [];
  readonly stats: Stats = {
    ops: {},
    answers: {},
    retries: 0,
    aborted: 0,
    serverErrors: 0,
    connectionErrors: 0,
    invariantChecks: 0,
    accepted: 0,
    refused: 0,
    faults: {},
    recoveredBySweep: 0,
    fundsThenAccepted: 0,
    externalFinals: {},
    slowestAnswerMs: 0,
    answersOver2s: 0,
    durationMs: 0,
  };
  /** The body each keyed request was first sent with, and its final answer. */
  private readonly answers = new Map<number, Promise<Answer | undefined>>();
  private readonly bodies = new Map<number, { body: TransferBody; party: Party; key?: string }>();
  /**
   * The key of a refused request that one of its retries then got accepted, by key: the body and the answer it is
   * now held with. Later retries are replays of that one (the same body) or refused (another body).
   */
  private readonly heldAfterRefusal = new Map<string, { body: TransferBody; answer: Answer }>();
  private readonly rng: Rng;
  fundedCents = 0;

  constructor(
    readonly t: TestApp,
    readonly options: Options,
    seed: number,
  ) {
    this.rng = new Rng(seed ^ 0x5bd1e995);
  }

  private turn = 0;

  /** Where the next request goes: the next of `options.targets` in turn, or the test app. */
  target(): string | TestApp['http'] {
    const targets = this.options.targets;
    return targets && targets.length > 0 ? targets[this.turn++ % targets.length] : this.t.http;
  }

  violation(message: string): void {
    if (this.violations.length < 30) this.violations.push(message.slice(0, 700));
  }

  async setUp(parties: Party[]): Promise<void> {
    for (let index = 0; index < 8; index++) {
      const party = parties[index < 5 ? 0 : 1];
      const owner = await createOwner(this.t.http, party.token, index % 4 === 3 ? 'COMPANY' : 'USER');
      const info = await openAccount(
        this.t.http,
        party.token,
        party.client.appId,
        owner,
        index % 4 === 3 ? 'COMPANY' : 'USER',
      );
      const limit = 100_000_000;
      await setLimits(this.t.http, party.token, info.uuid, {
        monthlyWithdrawLimit: limit,
        monthlyDepositLimit: limit,
        annualWithdrawLimit: limit,
        annualDepositLimit: limit,
      });
      const fee: Account['fee'] =
        index % 3 === 1
          ? { type: 'FIXED', value: 0.5 }
          : index % 3 === 2
            ? { type: 'PERCENTAGE', value: 1.5 }
            : { type: 'NONE', value: 0 };
      if (fee.type !== 'NONE') await setFees(this.t.http, party.token, info.uuid, fee.type, fee.value);
      await setBalance(this.t.http, party.token, info.uuid, FUNDING);
      this.fundedCents += toCents(FUNDING);
      this.accounts.push({ index, uuid: info.uuid, cvu: info.cvu, party, fee });
    }
  }

  feeCents(account: Account, amountCents: number): number {
    if (account.fee.type === 'FIXED') return toCents(account.fee.value);
    if (account.fee.type === 'PERCENTAGE')
      return ratioHalfEven(amountCents, toCents(account.fee.value), 10_000);
    return 0;
  }

  /** Runs the operations with CONCURRENCY requests in flight; returns when every one has its answer. */
  async run(ops: Op[]): Promise<void> {
    const started = Date.now();
    let next = 0;
    const runner = async () => {
      for (;;) {
        const index = next++;
        if (index >= ops.length) return;
        const op = ops[index];
        this.stats.ops[op.kind] = (this.stats.ops[op.kind] ?? 0) + 1;
        let settle!: (answer: Answer | undefined) => void;
        this.answers.set(index, new Promise((resolve) => (settle = resolve)));
        try {
          settle(await this.execute(index, op));
        } catch (error) {
          settle(undefined);
          this.violation(`op ${index} (${op.kind}) threw: ${(error as Error).stack ?? String(error)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, runner));
    this.stats.durationMs += Date.now() - started;
  }

  private bodyFor(op: Extract<Op, { from: number }>, amount: number): { body: TransferBody; party: Party } {
    const from = this.accounts[op.from];
    if ('to' in op && op.to >= 0) {
      const to = this.accounts[op.to];
      return { body: transferBody(from.uuid, to.cvu, amount), party: from.party };
    }
    const target = EXTERNALS['target' in op ? op.target : -1 - (op as { to: number }).to];
    return {
      body: transferBody(from.uuid, target.number, amount, {
        counterParty: counterParty(target.number, target.cuit, target.label),
      }),
      party: from.party,
    };
  }

  private async execute(index: number, op: Op): Promise<Answer | undefined> {
    switch (op.kind) {
      case 'internal':
      case 'withdraw': {
        const { body, party } = this.bodyFor(op, op.amount);
        this.bodies.set(index, { body, party, key: op.key });
        const answer = await this.send(party, body, op.key);
        this.expectTransferAnswer(index, op.kind, answer, body, op.key, op.from);
        return answer;
      }
      case 'deposit': {
        const account = this.accounts[op.account];
        const target = EXTERNALS[op.target];
        const body = transferBody(account.uuid, target.number, op.amount, {
          movementType: 'DEPOSIT',
          counterParty: counterParty(target.number, target.cuit, target.label),
        });
        this.bodies.set(index, { body, party: account.party, key: op.key });
        const answer = await this.send(account.party, body, op.key);
        this.expectTransferAnswer(index, 'deposit', answer, body, op.key, op.account);
        return answer;
      }
      case 'overBalance': {
        const { body, party } = this.bodyFor(op, op.amount);
        const answer = await this.send(party, body, op.key);
        if (!isRefusal(answer, 'amount', /insufficient funds/))
          this.violation(
            `op ${index} over-balance ${op.amount}: expected 400 insufficient funds, got ${show(answer)}`,
          );
        const written = await this.query<{ n: number }>(
          `SELECT ((SELECT count(*) FROM transfers WHERE amount = $1) + (SELECT count(*) FROM idempotency_keys WHERE key = $2))::int AS n`,
          [op.amount, op.key],
        );
        if (written[0].n !== 0) this.violation(`op ${index} over-balance refusal wrote ${written[0].n} rows`);
        this.stats.refused++;
        return answer;
      }
      case 'badAmount': {
        const { body, party } = this.bodyFor(op, op.amount);
        const answer = await this.send(party, body, op.key);
        if (!isRefusal(answer, 'amount'))
          this.violation(`op ${index} amount ${op.amount}: expected 400 at amount, got ${show(answer)}`);
        const written = await this.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM idempotency_keys WHERE key = $1)::int AS n`,
          [op.key],
        );
        if (written[0].n !== 0) this.violation(`op ${index} amount ${op.amount}: the refusal stored its key`);
        this.stats.refused++;
        return answer;
      }
      case 'race': {
        const { body, party } = this.bodyFor(op, op.amount);
        // A refusal stores no key (0017): copies run in different transactions (group commit), and under
        // faults a copy answered 500 or aborted is sent again later. If the sender has external transfers in
        // flight, the clearing simulator may release a WITHDRAW's hold or credit a DEPOSIT (any valid number
        // settles) in between, so a copy refused for funds and a later copy accepted are both right, with or
        // without faults; nothing else may differ.
        const [{ inFlight }] = await this.query<{ inFlight: number }>(
          `SELECT count(*)::int AS "inFlight" FROM transfers
            WHERE account_id = $1 AND status IN ('COMMITING', 'INICIADO', 'EN_CURSO')`,
          [body.accountUUID],
        );
        const answers = await Promise.all(
          Array.from({ length: op.copies }, () => this.send(party, body, op.key)),
        );
        const accepted = answers.find((answer) => answer.status === 201);
        const fundsThenAccepted =
          inFlight > 0 &&
          accepted !== undefined &&
          answers.every(
            (answer) => sameAnswer(answer, accepted) || isRefusal(answer, 'amount', /insufficient funds/),
          );
        const first = fundsThenAccepted ? accepted : answers[0];
        if (fundsThenAccepted && answers.some((answer) => answer.status !== 201))
          this.stats.fundsThenAccepted++;
        for (const answer of fundsThenAccepted ? [] : answers.slice(1)) {
          if (!sameAnswer(answer, first))
            this.violation(
              `op ${index} race of ${op.copies} with key ${op.key}: answers differ: ${show(first)} vs ${show(answer)}`,
            );
        }
        this.bodies.set(index, { body, party, key: op.key });
        this.expectTransferAnswer(index, 'race', first, body, op.key, op.from);
        const [{ n }] = await this.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM transfers WHERE account_id = $1 AND amount = $2 AND id IN
             (SELECT (response_body->>'id')::uuid FROM idempotency_keys WHERE key = $3)`,
          [body.accountUUID, body.amount, op.key],
        );
        if (n !== (first.status === 201 ? 1 : 0))
          this.violation(`op ${index} race with key ${op.key}: ${n} transfers for ${first.status}`);
        return first;
      }
      case 'replaySame':
      case 'replayDiff': {
        const original = await this.answers.get(op.of);
        const sent = this.bodies.get(op.of);
        if (!original || !sent?.key) return undefined;
        // One more peso, in cents: `amount + 1` in floating point can print more than two decimals (2.89 + 1).
        const body =
          op.kind === 'replaySame'
            ? sent.body
            : { ...sent.body, amount: (toCents(sent.body.amount) + 100) / 100 };
        const answer = await this.send(sent.party, body, sent.key);
        if (original.status === 201) {
          if (op.kind === 'replaySame') {
            if (!sameAnswer(answer, original))
              this.violation(
                `op ${index} replay of op ${op.of} (key ${sent.key}): ${show(answer)} instead of ${show(original)}`,
              );
          } else if (!isRefusal(answer, 'Idempotency-Key')) {
            this.violation(
              `op ${index} key ${sent.key} with another body: expected 400 at Idempotency-Key, got ${show(answer)}`,
            );
          }
          return answer;
        }
        // The original was refused and stored nothing: the retry runs as a request of its own, unless an earlier
        // retry of it was accepted (funds arrived since): then the key is held with that retry's body.
        const held = this.heldAfterRefusal.get(sent.key);
        if (held) {
          const same = held.body.amount === body.amount;
          if (same ? !sameAnswer(answer, held.answer) : !isRefusal(answer, 'Idempotency-Key'))
            this.violation(
              `op ${index} ${op.kind} of refused op ${op.of} (key ${sent.key}, held since a retry was accepted): ` +
                `expected ${same ? show(held.answer) : '400 at Idempotency-Key'}, got ${show(answer)}`,
            );
          return answer;
        }
        if (isRefusal(answer, 'Idempotency-Key')) {
          // A retry with the other body, in flight at the same time, was accepted first and holds the key.
          const [holder] = await this.query<{ amount: string }>(
            `SELECT t.amount::text AS amount FROM idempotency_keys k
               JOIN transfers t ON t.id = (k.response_body->>'id')::uuid WHERE k.key = $1`,
            [sent.key],
          );
          if (!holder || toCents(Number(holder.amount)) === toCents(body.amount))
            this.violation(
              `op ${index} ${op.kind} of refused op ${op.of} (key ${sent.key}): ${show(answer)}, and no other body holds the key`,
            );
          return answer;
        }
        if (answer.status === 201) this.heldAfterRefusal.set(sent.key, { body, answer });
        const from = this.accounts.findIndex((account) => account.uuid === body.accountUUID);
        this.expectTransferAnswer(index, `${op.kind} of refused op ${op.of}`, answer, body, sent.key, from);
        return answer;
      }
      case 'read': {
        const account = this.accounts[op.account];
        const answer = await this.retrying(() =>
          request(this.target())
            .get(`/v1/wallet/accounts/${account.uuid}/balance`)
            .set('Authorization', bearer(account.party.token)),
        );
        const balance = (answer.body as { balance?: unknown } | undefined)?.balance;
        if (answer.status !== 200 || typeof balance !== 'number' || balance < 0)
          this.violation(`op ${index} balance read: ${show(answer)}`);
        await this.checkInvariant(`after op ${index} (balance read)`);
        return answer;
      }
    }
  }

  /** Checks a transfer's answer against what the test expects, and records an accepted transfer. */
  private expectTransferAnswer(
    index: number,
    what: string,
    answer: Answer,
    body: TransferBody,
    key: string | undefined,
    from: number,
  ): void {
    const account = this.accounts[from];
    const internalTo = this.accounts.findIndex((other) => other.cvu === body.counterParty.identifier);
    const target = EXTERNALS.findIndex((external) => external.number === body.counterParty.identifier);
    const route = internalTo >= 0 ? 'INTERNAL' : 'EXTERNAL';
    if (answer.status === 201) {
      const amountCents = toCents(body.amount);
      const feeCents = this.feeCents(account, amountCents);
      const taxCents = ratioHalfEven(amountCents, TAX_RATE_PER_MILLE, 1000);
      const view = answer.body as {
        uuid: string;
        status: string;
        movementType: string;
        amount: { value: number };
        fees: number;
        taxes: number;
        counterParty: { type: string };
      };
      const expected = {
        status: route === 'INTERNAL' ? 'ACREDITADO' : 'INICIADO',
        movementType: body.movementType,
        amount: body.amount,
        fees: fromCents(feeCents),
        taxes: fromCents(taxCents),
        type: route,
      };
      const got = {
        status: view.status,
        movementType: view.movementType,
        amount: view.amount?.value,
        fees: view.fees,
        taxes: view.taxes,
        type: view.counterParty?.type,
      };
      if (JSON.stringify(got) !== JSON.stringify(expected))
        this.violation(
          `op ${index} ${what}: answer ${JSON.stringify(got)} but expected ${JSON.stringify(expected)}`,
        );
      if (this.accepted.some((known) => known.uuid === view.uuid)) return; // a replay of a known transfer
      this.accepted.push({
        op: index,
        key,
        uuid: view.uuid,
        route,
        movementType: body.movementType,
        account: from,
        to: internalTo >= 0 ? internalTo : undefined,
        target: target >= 0 ? target : undefined,
        amountCents,
        feeCents,
        taxCents,
      });
      this.stats.accepted++;
      return;
    }
    if (body.movementType === 'WITHDRAW' && isRefusal(answer, 'amount', /insufficient funds/)) {
      this.stats.refused++;
      return;
    }
    this.violation(`op ${index} ${what} ${body.amount} (key ${key}): unexpected answer ${show(answer)}`);
  }

  /** POST /v1/wallet/transactions until an answer that is not a fault (5xx, cut connection, client abort). */
  async send(party: Party, body: TransferBody, key: string | undefined): Promise<Answer> {
    return this.retrying(() => {
      const test = request(this.target())
        .post('/v1/wallet/transactions')
        .set('Authorization', bearer(party.token));
      if (key !== undefined) test.set('Idempotency-Key', key);
      return test.send(body);
    }, key !== undefined);
  }

  /** One request, retried while it fails by a fault; without faults, the first answer stands. */
  async retrying(make: () => request.Test, mayAbort = true): Promise<Answer> {
    const deadline = Date.now() + 60_000;
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) this.stats.retries++;
      const test = make();
      const abort = this.options.faults && mayAbort && this.rng.chance(this.options.abortChance);
      if (abort) test.timeout(this.rng.int(1, 15));
      const sentAt = Date.now();
      try {
        const response = await test;
        const took = Date.now() - sentAt;
        this.stats.slowestAnswerMs = Math.max(this.stats.slowestAnswerMs, took);
        if (took > 2_000) this.stats.answersOver2s++;
        const answer: Answer = {
          status: response.status,
          body: response.body as unknown,
          text: response.text,
        };
        this.stats.answers[String(answer.status)] = (this.stats.answers[String(answer.status)] ?? 0) + 1;
        if (answer.status < 500) return answer;
        this.stats.serverErrors++;
        if (!this.options.faults || Date.now() > deadline) return answer;
      } catch (error) {
        if ((error as { timeout?: number }).timeout !== undefined) this.stats.aborted++;
        else this.stats.connectionErrors++;
        if ((!this.options.faults && !abort) || Date.now() > deadline)
          return { status: 0, body: undefined, text: String(error) };
      }
      await new Promise((resolve) => setTimeout(resolve, 20 + this.rng.int(0, 80)));
    }
  }

  /** A query from the test's side, retried while the fault loop terminates its connection. */
  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return (await this.t.dataSource.query(sql, params)) as T[];
      } catch (error) {
        if (!this.options.faults || attempt > 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  async verifyLedger(): Promise<Awaited<ReturnType<LedgerService['verify']>>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.t.app.get(LedgerService).verify();
      } catch (error) {
        if (!this.options.faults || attempt > 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  /**
   * The bank invariant: in one statement (one snapshot), wallets plus system accounts sum to zero, no wallet is
   * negative and ADJUSTMENTS is the funding; then `ledger verify` (its own snapshot), which also checks that
   * HOLDS holds exactly the external withdrawals in flight, SETTLEMENT, FEE_REVENUE and TAX_PAYABLE exactly what
   * the settled transfers say, every transfer has the entries its status calls for and none is reversed beyond
   * its amount (decision 0060).
   */
  async checkInvariant(when: string): Promise<void> {
    this.stats.invariantChecks++;
    const [row] = await this.query<Record<string, string>>(
      `WITH sys AS (SELECT account_id, sum(amount) AS s FROM postings GROUP BY account_id)
       SELECT
         (SELECT coalesce(sum(balance), 0) FROM ledger_accounts WHERE kind = 'WALLET')::text AS wallets,
         (SELECT coalesce(min(balance), 0) FROM ledger_accounts WHERE kind = 'WALLET')::text AS min_wallet,
         (SELECT coalesce(sum(s), 0) FROM sys JOIN ledger_accounts a ON a.id = sys.account_id
           WHERE a.kind = 'SYSTEM')::text AS system,
         (SELECT coalesce(sum(s), 0) FROM sys)::text AS all_postings,
         (SELECT coalesce(sum(s), 0) FROM sys WHERE account_id = $1)::text AS adjustments`,
      [systemAccountId('ADJUSTMENTS', 'ARS')],
    );
    const cents = (name: string) => toCents(Number(row[name]));
    const problems: string[] = [];
    if (cents('wallets') + cents('system') !== 0 || cents('all_postings') !== 0)
      problems.push(
        `money not conserved: wallets ${row.wallets} + system ${row.system} (postings ${row.all_postings})`,
      );
    if (cents('min_wallet') < 0) problems.push(`a wallet is negative: ${row.min_wallet}`);
    if (cents('adjustments') !== -this.fundedCents)
      problems.push(`adjustments ${row.adjustments}, funded ${fromCents(this.fundedCents)}`);
    const report = await this.verifyLedger();
    for (const code of ['HOLDS', 'SETTLEMENT', 'FEE_REVENUE', 'TAX_PAYABLE'])
      if (!report.systemAccounts.some((account) => account.currency === 'ARS' && account.code === code))
        problems.push(`ledger verify did not compare ${code} ARS with the transfers`);
    for (const account of report.systemAccounts)
      if (toCents(Number(account.balance)) !== toCents(Number(account.expected)))
        problems.push(
          `${account.code} ${account.currency} ${account.balance} but the transfers say ${account.expected}`,
        );
    if (!report.ok) problems.push(`ledger verify: ${JSON.stringify(report)}`);
    for (const problem of problems) this.violation(`invariant ${when}: ${problem}`);
  }

  inFlight(): Promise<{ id: string; status: string }[]> {
    return this.query<{ id: string; status: string }>(
      `SELECT id, status FROM transfers WHERE status IN ('COMMITING', 'INICIADO', 'EN_CURSO')`,
    );
  }

  /** With every transfer final: the model, the records, the settlements, the events, the keys. */
  async checkFinal(): Promise<void> {
    await this.checkInvariant('at the end');
    const rows = await this.query<{
      id: string;
      account_id: string;
      app_id: string;
      movement_type: string;
      route: string;
      status: TransferStatus;
      linked_transfer_id: string | null;
      amount: string;
      taxes: string;
    }>(
      `SELECT id, account_id, app_id, movement_type, route, status, linked_transfer_id, amount::text, taxes::text
         FROM transfers`,
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    const events = await this.query<{ subject: string; app_id: string; payload: unknown }>(
      `SELECT subject, app_id, payload FROM webhook_events WHERE event = 'transfer_update' ORDER BY seq`,
    );
    const eventsOf = new Map<string, { app: string; data: unknown }[]>();
    for (const event of events) {
      const payload = (typeof event.payload === 'string' ? JSON.parse(event.payload) : event.payload) as {
        data: unknown;
      };
      eventsOf.set(event.subject, [
        ...(eventsOf.get(event.subject) ?? []),
        { app: event.app_id, data: payload.data },
      ]);
    }
    const settlements = await this.query<{ reference: string; kind: string; n: number }>(
      `SELECT reference, kind, count(*)::int AS n FROM journal_entries
        WHERE kind IN ('TRANSFER_CAPTURE', 'TRANSFER_RELEASE', 'TRANSFER_CREDIT', 'INTERNAL_TRANSFER', 'TRANSFER_HOLD')
        GROUP BY reference, kind`,
    );
    const entriesOf = new Map<string, string[]>();
    for (const entry of settlements)
      entriesOf.set(entry.reference, [
        ...(entriesOf.get(entry.reference) ?? []),
        ...Array<string>(entry.n).fill(entry.kind),
      ]);

    const expectedCents = this.accounts.map(() => toCents(FUNDING));
    const seen = new Set<string>();
    for (const accepted of this.accepted) {
      const account = this.accounts[accepted.account];
      const row = byId.get(accepted.uuid);
      const label = `transfer ${accepted.uuid} (op ${accepted.op}, ${accepted.route} ${accepted.movementType})`;
      if (!row) {
        this.violation(`${label}: accepted but not in the transfers table`);
        continue;
      }
      seen.add(row.id);
      const total = accepted.amountCents + accepted.feeCents + accepted.taxCents;
      const entries = (entriesOf.get(row.id) ?? []).sort().join(',');
      const expectEvents = (subject: string, app: string, movementType: string, newStatus: string) => {
        const got = canonical(eventsOf.get(subject) ?? []);
        const want = canonical([
          { app, data: { uuid: subject, movementType, backStatus: 'PENDING', newStatus } },
        ]);
        if (got !== want) this.violation(`${label}: transfer_update events ${got}, expected ${want}`);
      };
      if (accepted.route === 'INTERNAL') {
        const to = this.accounts[accepted.to!];
        const deposit = row.linked_transfer_id ? byId.get(row.linked_transfer_id) : undefined;
        if (
          row.status !== 'ACREDITADO' ||
          !deposit ||
          deposit.account_id !== to.uuid ||
          deposit.status !== 'ACREDITADO'
        )
          this.violation(`${label}: internal records ${JSON.stringify(row)} / ${JSON.stringify(deposit)}`);
        if (deposit) {
          seen.add(deposit.id);
          expectEvents(deposit.id, to.party.client.appId, 'DEPOSIT', 'ACCEPTED');
          if (toCents(Number(deposit.taxes)) !== accepted.taxCents)
            this.violation(`${label}: the DEPOSIT's taxes ${deposit.taxes}`);
        }
        if (entries !== 'INTERNAL_TRANSFER') this.violation(`${label}: journal entries ${entries}`);
        expectedCents[accepted.account] -= total;
        expectedCents[accepted.to!] += accepted.amountCents - accepted.taxCents;
        continue;
      }
      const { verdict, label: targetLabel } = EXTERNALS[accepted.target!];
      const final = `${targetLabel} ${row.status}`;
      this.stats.externalFinals[final] = (this.stats.externalFinals[final] ?? 0) + 1;
      if (row.status !== verdict)
        this.violation(`${label}: ended ${row.status}, the simulator says ${verdict}`);
      const newStatus = row.status === 'ACREDITADO' ? 'ACCEPTED' : 'REJECTED';
      expectEvents(row.id, account.party.client.appId, accepted.movementType, newStatus);
      if (accepted.movementType === 'WITHDRAW') {
        const settledBy = row.status === 'ACREDITADO' ? 'TRANSFER_CAPTURE' : 'TRANSFER_RELEASE';
        if (entries !== [settledBy, 'TRANSFER_HOLD'].sort().join(','))
          this.violation(`${label} ${row.status}: journal entries ${entries}`);
        if (row.status === 'ACREDITADO') expectedCents[accepted.account] -= total;
      } else {
        const want = row.status === 'ACREDITADO' ? 'TRANSFER_CREDIT' : '';
        if (entries !== want) this.violation(`${label} ${row.status}: journal entries ${entries}`);
        if (row.status === 'ACREDITADO')
          expectedCents[accepted.account] += accepted.amountCents - accepted.feeCents - accepted.taxCents;
      }
    }
    for (const row of rows)
      if (!seen.has(row.id)) this.violation(`transfer ${row.id} exists but no answer accepted it`);

    // Each account's balance, read through the API, is what the answers the test got add up to.
    for (const account of this.accounts) {
      const answer = await this.retrying(
        () =>
          request(this.target())
            .get(`/v1/wallet/accounts/${account.uuid}/balance`)
            .set('Authorization', bearer(account.party.token)),
        false,
      );
      const want = fromCents(expectedCents[account.index]);
      if (
        answer.status !== 200 ||
        answer.body === undefined ||
        (answer.body as { balance: number }).balance !== want
      )
        this.violation(
          `account ${account.index}: balance ${show(answer)}, the accepted transfers add up to ${want}`,
        );
    }

    // Every status history is a legal path ending in the transfer's status.
    const histories = await this.query<{
      id: string;
      status: TransferStatus;
      tos: TransferStatus[];
      froms: (TransferStatus | null)[];
    }>(
      `SELECT t.id, t.status, array_agg(h.from_status ORDER BY h.step) AS froms, array_agg(h.to_status ORDER BY h.step) AS tos
         FROM transfers t JOIN transfer_status_path h ON h.transfer_id = t.id GROUP BY t.id, t.status`,
    );
    if (histories.length !== rows.length)
      this.violation(`${rows.length - histories.length} transfers without history`);
    for (const row of histories) {
      let legal =
        row.froms[0] === null && row.tos[0] === 'COMMITING' && row.tos[row.tos.length - 1] === row.status;
      for (let i = 1; i < row.tos.length; i++)
        legal &&= row.froms[i] === row.tos[i - 1] && canMove(row.tos[i - 1], row.tos[i]);
      if (!legal) this.violation(`transfer ${row.id}: history ${JSON.stringify(row)}`);
    }

    // Keys: one per accepted keyed request, storing that request's answer (the transfer's view row,
    // decisions/0015); refusals stored none.
    const keys = await this.query<{ key: string; uuid: string | null }>(
      `SELECT key, response_body->>'id' AS uuid FROM idempotency_keys`,
    );
    const keyed = this.accepted.filter((accepted) => accepted.key !== undefined);
    const stored = new Map(keys.map((row) => [row.key, row.uuid]));
    if (keys.length !== keyed.length)
      this.violation(`${keys.length} idempotency keys stored, ${keyed.length} accepted`);
    for (const accepted of keyed)
      if (stored.get(accepted.key!) !== accepted.uuid)
        this.violation(`key ${accepted.key}: stores ${stored.get(accepted.key!)}, answered ${accepted.uuid}`);
  }

  summary(title: string): string {
    return `${title}\n${JSON.stringify(
      { seed: SEED, backend, accounts: this.accounts.length, transfers: this.accepted.length, ...this.stats },
      null,
      1,
    )}\n${REPLAY}`;
  }

  /** `ledger verify` through the built CLI: a violation unless it exits 0 and reports "ok": true. */
  async verifyLedgerByCli(): Promise<void> {
    const cli = await runCli(this.t, ['ledger', 'verify']);
    if (cli.code !== 0 || !/"ok":\s*true/.test(cli.stdout))
      this.violation(
        `ledger verify (CLI) exited ${cli.code}: ${cli.stdout.slice(0, 500)} ${cli.stderr.slice(-500)}`,
      );
  }

  /** Fails with every violation, the seed and the way to replay it. */
  assertClean(title: string): void {
    if (this.violations.length > 0)
      throw new Error(
        `${title}: ${this.violations.length} violation(s) [seed ${SEED}; ${REPLAY}]\n${this.violations.join('\n')}`,
      );
  }
}

/** JSON with sorted keys: member order carries no meaning in JSON (a replay comes from a jsonb column). */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

export const sameAnswer = (a: Answer, b: Answer) =>
  a.status === b.status && canonical(a.body) === canonical(b.body);

export interface Answer {
  status: number;
  body: unknown;
  text: string;
}

export const show = (answer: Answer | undefined) =>
  answer ? `${answer.status} ${answer.text.slice(0, 300)}` : 'no answer';

export function isRefusal(answer: Answer, path: string, message?: RegExp): boolean {
  if (answer.status !== 400) return false;
  const items = (answer.body as { detail?: { items?: { path: string; message: string }[] } }).detail?.items;
  return (
    Array.isArray(items) &&
    items.length === 1 &&
    items[0].path === path &&
    (message === undefined || message.test(items[0].message))
  );
}

/** Any failure of `work` carries the seed and the replay command. */
export async function withSeed(work: () => Promise<void>, replay = REPLAY): Promise<void> {
  try {
    await work();
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    if (message.includes(replay)) throw error;
    const wrapped = new Error(`[bank seed ${SEED}; ${replay}]\n${message}`);
    wrapped.stack = `${wrapped.message}\n${(error as Error).stack ?? ''}`;
    throw wrapped;
  }
}

// ---- processes of the fault test ----

export interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<void>;
}

export const started: ChildProcess[] = [];

export function startProcess(command: string, args: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  const keep = (chunk: string) => {
    output = (output + chunk).slice(-20_000);
  };
  child.stdout?.setEncoding('utf8').on('data', keep);
  child.stderr?.setEncoding('utf8').on('data', keep);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { child, output: () => output, exited };
}

export async function waitForOutput(running: Running, text: string, timeoutMs = 30_000): Promise<void> {
  const seen = await waitFor(
    () =>
      running.output().includes(text) || running.child.exitCode !== null || running.child.signalCode !== null,
    timeoutMs,
    50,
  );
  if (!seen || !running.output().includes(text))
    throw new Error(
      `process did not print "${text}" (exit ${running.child.exitCode}):\n${running.output().slice(-3000)}`,
    );
}

export async function kill(running: Running, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return;
  running.child.kill(signal);
  await Promise.race([running.exited, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
}

export async function startRedis(port: number): Promise<Running> {
  const redis = startProcess(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    process.env,
  );
  await waitForOutput(redis, 'Ready to accept connections', 10_000);
  return redis;
}
