import { createHash } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Principal } from '../../common/auth/principal.js';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '../../common/errors/domain-errors.js';
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor, type Page } from '../../common/http/pagination.js';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { cuitProblem } from '../identity/tax-id.js';
import { WEBHOOK_EVENTS } from '../webhooks/webhook-events.js';
import { WebhooksService } from '../webhooks/webhooks.service.js';
import { AccountsService } from '../wallet/accounts/accounts.service.js';
import type { WalletAccountEntity } from '../wallet/accounts/entities/wallet-account.entity.js';
import { isValidCbu } from '../wallet/cvu.js';
import { LedgerService } from '../wallet/ledger/ledger.service.js';
import { fromDb, Money, parseAmount, roundTo, toDb } from '../wallet/money.js';
import { periodsOf } from '../wallet/periods.js';
import { CLEARING_RAIL, type ClearingRail } from './clearing/clearing-rail.port.js';
import { CounterpartyService, type ResolvedCounterparty } from './counterparty/counterparty.service.js';
import type {
  CreateTransactionDto,
  CreateTransactionResponseDto,
  TransactionInfoDto,
  TransactionListQueryDto,
} from './dto/transfer.dto.js';
import { TransferViews } from './transfer-views.js';

const actorOf = (principal: Principal) =>
  principal.kind === 'client' ? `client:${principal.appId}` : `subject:${principal.subject}`;

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * POST /wallet/transactions and the reads. Internal transfers settle in one
 * transaction (both sides ACREDITADO); external ones hold the money and go to
 * the clearing rail. Every check that refuses (funds, limits, state) runs
 * before anything is written, under the sender's ledger row lock, so two
 * concurrent transfers cannot both spend the same money.
 */
@Injectable()
export class TransfersService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly ledger: LedgerService,
    private readonly accounts: AccountsService,
    private readonly counterparties: CounterpartyService,
    private readonly webhooks: WebhooksService,
    private readonly views: TransferViews,
    @Inject(CLEARING_RAIL) private readonly rail: ClearingRail,
  ) {}

  async create(
    principal: Principal,
    input: CreateTransactionDto,
    idempotencyKey?: string,
  ): Promise<CreateTransactionResponseDto> {
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
      throw ValidationFailedError.single(
        'Idempotency-Key',
        'invalid',
        'Idempotency-Key must be 1-255 visible ASCII characters',
      );
    }
    const counterParty = input.counterParty;
    if (!isValidCbu(counterParty.identifier)) {
      throw ValidationFailedError.single(
        'counterParty.identifier',
        'invalid',
        'identifier has invalid check digits',
      );
    }
    if ((counterParty.identifier.startsWith('000') ? 'CVU' : 'CBU') !== counterParty.identifierType) {
      throw ValidationFailedError.single(
        'counterParty.identifierType',
        'invalid',
        'identifierType does not match the identifier (a CVU starts with 000)',
      );
    }
    const taxProblem = cuitProblem(counterParty.cValue, ['person', 'entity']);
    if (taxProblem)
      throw ValidationFailedError.single('counterParty.cValue', 'invalid', `cValue ${taxProblem}`);

    let resolved: ResolvedCounterparty | undefined;
    try {
      resolved = await this.counterparties.lookup(counterParty.identifier, 'counterParty.identifier');
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
    const internal = resolved?.internalAccountId !== undefined;
    if (internal && input.movementType === 'DEPOSIT') {
      throw ValidationFailedError.single(
        'movementType',
        'invalid',
        'money from an account of this service comes as its WITHDRAW, not as a DEPOSIT pulled by you',
      );
    }
    const requestHash = createHash('sha256').update(canonicalJson(input)).digest('hex');

    const outcome = await this.withRetries(() =>
      this.dataSource.transaction(async (manager) => {
        if (idempotencyKey !== undefined) {
          const stored = await this.claimKey(manager, principal.appId, idempotencyKey, requestHash);
          if (stored) return { response: stored, submit: undefined };
        }
        const account = await this.requireAccount(manager, principal, input.accountUUID);
        if (account.status !== 'ACTIVE')
          throw new ForbiddenError('INVALID_STATE', `the account is ${account.status}`);
        const amount = parseAmount(input.amount, account.currency, 'amount', { min: 1 });
        const fee = this.feeOf(account, amount);
        const tax = roundTo(amount.times(this.config.transferTaxRate), account.currency);
        const base = {
          appId: account.appId,
          accountId: account.id,
          counterpartyName: counterParty.name.trim(),
          counterpartyTaxId: counterParty.cValue.replace(/\D/g, ''),
          counterpartyIdentifierType: counterParty.identifierType,
          counterpartyIdentifier: counterParty.identifier,
          counterpartyBranch: counterParty.branchName || null,
          currency: account.currency,
          concept: input.concept,
          summary: input.summary ?? null,
          actor: actorOf(principal),
        };
        let transferId: string;
        let submit: string | undefined;
        if (internal) {
          if (resolved!.internalAccountId === account.id) {
            throw ValidationFailedError.single(
              'counterParty.identifier',
              'invalid',
              'the counterparty is the same account',
            );
          }
          transferId = await this.internalTransfer(
            manager,
            account,
            resolved!.internalAccountId!,
            amount,
            fee,
            tax,
            base,
          );
        } else if (input.movementType === 'WITHDRAW') {
          transferId = await this.externalWithdraw(manager, account, amount, fee, tax, base);
          submit = transferId;
        } else {
          transferId = await this.externalDeposit(manager, account, amount, fee, tax, base);
          submit = transferId;
        }
        const response = await this.views.created(manager, transferId);
        if (idempotencyKey !== undefined) {
          await manager.query(
            `UPDATE idempotency_keys SET response_status = 201, response_body = $3 WHERE app_id = $1 AND key = $2`,
            [principal.appId, idempotencyKey, JSON.stringify(response)],
          );
        }
        return { response, submit };
      }),
    );
    // After commit: if this hand-over is lost, the clearing recovery sweep submits the transfer again.
    if (outcome.submit) await this.rail.submit(outcome.submit).catch(() => undefined);
    return outcome.response;
  }

  /**
   * Money arriving from the rail into one of this service's CVUs (someone at another institution pays in):
   * a DEPOSIT that is ACREDITADO at once (settlement → account), announced to the account's application with
   * transfer_update. Refused, writing nothing, when the account cannot receive it.
   */
  async inbound(input: {
    cvu: string;
    amount: number;
    fromIdentifier: string;
    fromName: string;
    fromTaxId: string;
    concept: string;
  }): Promise<{ transferId: string; accountId: string; status: 'ACREDITADO' }> {
    if (!isValidCbu(input.fromIdentifier)) {
      throw ValidationFailedError.single(
        'from',
        'invalid',
        'the paying account must be a CBU/CVU with valid check digits',
      );
    }
    const taxProblem = cuitProblem(input.fromTaxId, ['person', 'entity']);
    if (taxProblem) throw ValidationFailedError.single('cuit', 'invalid', `cuit ${taxProblem}`);
    return this.dataSource.transaction(async (manager) => {
      const [row] = (await manager.query(
        `SELECT id, app_id FROM wallet_accounts WHERE cvu = $1 AND status <> 'DELETED'`,
        [input.cvu],
      )) as { id: string; app_id: string }[];
      if (!row) throw new NotFoundError(input.cvu, 'No account with that CVU');
      const account = await this.accounts.require(manager, { kind: 'client', appId: row.app_id }, row.id);
      if (account.status !== 'ACTIVE')
        throw new ForbiddenError('INVALID_STATE', `the account is ${account.status}`);
      const amount = parseAmount(input.amount, account.currency, 'amount', { min: 1 });
      await this.ledger.lockWallets(manager, [account.id]);
      await this.checkLimits(
        manager,
        account.id,
        'deposit',
        amount,
        limitsOf(account, 'deposit'),
        'the account',
      );
      const settlement = await this.ledger.systemAccount(manager, 'SETTLEMENT', account.currency);
      const id = randomUUID();
      await this.ledger.post(manager, {
        appId: account.appId,
        kind: 'INBOUND_TRANSFER',
        reference: id,
        actor: 'system:clearing-inbound',
        lines: [
          { accountId: settlement, amount: amount.negated(), currency: account.currency },
          { accountId: account.id, amount, currency: account.currency },
        ],
      });
      await this.insertTransfer(manager, id, {
        appId: account.appId,
        accountId: account.id,
        counterpartyName: input.fromName,
        counterpartyTaxId: input.fromTaxId.replace(/\D/g, ''),
        counterpartyIdentifierType: input.fromIdentifier.startsWith('000') ? 'CVU' : 'CBU',
        counterpartyIdentifier: input.fromIdentifier,
        counterpartyBranch: null,
        currency: account.currency,
        concept: input.concept,
        summary: null,
        actor: 'system:clearing-inbound',
        movementType: 'DEPOSIT',
        route: 'EXTERNAL',
        status: 'ACREDITADO',
        amount,
        fee: new Money(0),
        tax: new Money(0),
        counterpartyAccountId: null,
        linkedTransferId: null,
      });
      await this.accounts.addOperated(manager, account.id, 'deposit', amount);
      await this.webhooks.emit(manager, {
        appId: account.appId,
        event: WEBHOOK_EVENTS.transferUpdate,
        subject: id,
        data: { uuid: id, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
      });
      return { transferId: id, accountId: account.id, status: 'ACREDITADO' as const };
    });
  }

  async get(principal: Principal, id: string): Promise<TransactionInfoDto> {
    const found = await this.views.find(this.dataSource.manager, principal, id);
    if (!found) throw new NotFoundError(id, 'Transfer not found');
    return found;
  }

  async list(
    principal: Principal,
    filter: TransactionListQueryDto & { accountId?: string },
    limit = DEFAULT_PAGE_SIZE,
    cursor?: string,
  ): Promise<Page<TransactionInfoDto>> {
    if (filter.accountId !== undefined)
      await this.accounts.require(this.dataSource.manager, principal, filter.accountId);
    const rows = await this.views.list(
      this.dataSource.manager,
      principal,
      filter,
      limit + 1,
      decodeCursor(cursor),
    );
    const more = rows.length > limit;
    const served = more ? rows.slice(0, limit) : rows;
    const last = served[served.length - 1];
    return {
      items: served.map((row) => row.view),
      nextCursor: more && last ? encodeCursor({ createdAt: last.createdAt, id: last.view.uuid }) : null,
    };
  }

  private async internalTransfer(
    manager: EntityManager,
    account: WalletAccountEntity,
    receiverId: string,
    amount: Money,
    fee: Money,
    tax: Money,
    base: TransferBase,
  ): Promise<string> {
    const balances = await this.ledger.lockWallets(manager, [account.id, receiverId]);
    const receiver = (await manager.query(
      `SELECT id, app_id, status, currency, monthly_deposit_limit::text AS mdl, annual_deposit_limit::text AS adl
         FROM wallet_accounts WHERE id = $1`,
      [receiverId],
    )) as { id: string; app_id: string; status: string; currency: string; mdl: string; adl: string }[];
    const to = receiver[0];
    if (!to || to.status !== 'ACTIVE')
      throw new ForbiddenError('INVALID_STATE', 'the receiving account cannot receive money');
    if (to.currency !== account.currency) {
      throw ValidationFailedError.single(
        'counterParty.identifier',
        'invalid',
        'the receiving account holds another currency',
      );
    }
    const total = amount.plus(fee).plus(tax);
    // The tax applies to debits and credits: the receiver pays it on what it receives.
    const creditTax = roundTo(amount.times(this.config.transferTaxRate), account.currency);
    this.checkFunds(balances.get(account.id), total);
    await this.checkLimits(
      manager,
      account.id,
      'withdraw',
      amount,
      limitsOf(account, 'withdraw'),
      'the account',
    );
    await this.checkLimits(
      manager,
      to.id,
      'deposit',
      amount,
      { monthly: to.mdl, annual: to.adl },
      'the receiving account',
    );
    const [feeAccount, taxAccount] = await Promise.all([
      this.ledger.systemAccount(manager, 'FEE_REVENUE', account.currency),
      this.ledger.systemAccount(manager, 'TAX_PAYABLE', account.currency),
    ]);
    const withdrawId = randomUUID();
    const depositId = randomUUID();
    await this.ledger.post(manager, {
      appId: account.appId,
      kind: 'INTERNAL_TRANSFER',
      reference: withdrawId,
      actor: base.actor,
      lines: [
        { accountId: account.id, amount: total.negated(), currency: account.currency },
        { accountId: to.id, amount: amount.minus(creditTax), currency: account.currency },
        { accountId: feeAccount, amount: fee, currency: account.currency },
        { accountId: taxAccount, amount: tax.plus(creditTax), currency: account.currency },
      ],
    });
    const [sender] = (await manager.query(
      `SELECT w.cvu, coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS name, coalesce(u.tax_id, c.tax_value) AS tax_id
         FROM wallet_accounts w LEFT JOIN users u ON w.owner_type = 'USER' AND u.id = w.owner_id
         LEFT JOIN companies c ON w.owner_type = 'COMPANY' AND c.id = w.owner_id WHERE w.id = $1`,
      [account.id],
    )) as { cvu: string; name: string; tax_id: string }[];
    await this.insertTransfer(manager, withdrawId, {
      ...base,
      movementType: 'WITHDRAW',
      route: 'INTERNAL',
      status: 'ACREDITADO',
      amount,
      fee,
      tax,
      counterpartyAccountId: to.id,
      linkedTransferId: depositId,
    });
    await this.insertTransfer(manager, depositId, {
      ...base,
      appId: to.app_id,
      accountId: to.id,
      counterpartyName: sender.name ?? '',
      counterpartyTaxId: sender.tax_id ?? '',
      counterpartyIdentifierType: 'CVU',
      counterpartyIdentifier: sender.cvu,
      counterpartyBranch: null,
      movementType: 'DEPOSIT',
      route: 'INTERNAL',
      status: 'ACREDITADO',
      amount,
      fee: new Money(0),
      tax: creditTax,
      counterpartyAccountId: account.id,
      linkedTransferId: withdrawId,
    });
    await this.accounts.addOperated(manager, account.id, 'withdraw', amount);
    await this.accounts.addOperated(manager, to.id, 'deposit', amount);
    // The receiving application learns of incoming money as a transfer_update of its DEPOSIT (docs/decisions/0013).
    await this.webhooks.emit(manager, {
      appId: to.app_id,
      event: WEBHOOK_EVENTS.transferUpdate,
      subject: depositId,
      data: { uuid: depositId, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
    });
    return withdrawId;
  }

  private async externalWithdraw(
    manager: EntityManager,
    account: WalletAccountEntity,
    amount: Money,
    fee: Money,
    tax: Money,
    base: TransferBase,
  ): Promise<string> {
    const balances = await this.ledger.lockWallets(manager, [account.id]);
    const total = amount.plus(fee).plus(tax);
    this.checkFunds(balances.get(account.id), total);
    await this.checkLimits(
      manager,
      account.id,
      'withdraw',
      amount,
      limitsOf(account, 'withdraw'),
      'the account',
    );
    const holds = await this.ledger.systemAccount(manager, 'HOLDS', account.currency);
    const id = randomUUID();
    await this.ledger.post(manager, {
      appId: account.appId,
      kind: 'TRANSFER_HOLD',
      reference: id,
      actor: base.actor,
      lines: [
        { accountId: account.id, amount: total.negated(), currency: account.currency },
        { accountId: holds, amount: total, currency: account.currency },
      ],
    });
    await this.insertTransfer(manager, id, {
      ...base,
      movementType: 'WITHDRAW',
      route: 'EXTERNAL',
      status: 'INICIADO',
      amount,
      fee,
      tax,
      counterpartyAccountId: null,
      linkedTransferId: null,
    });
    return id;
  }

  private async externalDeposit(
    manager: EntityManager,
    account: WalletAccountEntity,
    amount: Money,
    fee: Money,
    tax: Money,
    base: TransferBase,
  ): Promise<string> {
    await this.ledger.lockWallets(manager, [account.id]);
    if (fee.plus(tax).gte(amount)) {
      throw ValidationFailedError.single('amount', 'invalid', 'amount does not cover the fee and taxes');
    }
    await this.checkLimits(
      manager,
      account.id,
      'deposit',
      amount,
      limitsOf(account, 'deposit'),
      'the account',
    );
    const id = randomUUID();
    await this.insertTransfer(manager, id, {
      ...base,
      movementType: 'DEPOSIT',
      route: 'EXTERNAL',
      status: 'INICIADO',
      amount,
      fee,
      tax,
      counterpartyAccountId: null,
      linkedTransferId: null,
    });
    return id;
  }

  private checkFunds(balance: Money | undefined, total: Money): void {
    if ((balance ?? new Money(0)).lt(total)) {
      throw ValidationFailedError.single(
        'amount',
        'invalid',
        'insufficient funds: the available balance does not cover amount, fees and taxes',
      );
    }
  }

  /** Operated amounts of the month and year plus what is in flight plus this amount, against the limits. */
  private async checkLimits(
    manager: EntityManager,
    accountId: string,
    side: 'deposit' | 'withdraw',
    amount: Money,
    limits: { monthly: string; annual: string },
    whose: string,
  ): Promise<void> {
    const { month, year } = periodsOf(new Date(), this.config.operationsTimeZone);
    const [row] = (await manager.query(
      `SELECT
         coalesce((SELECT ${side} FROM operated_amounts WHERE account_id = $1 AND period = $2), 0)::text AS month,
         coalesce((SELECT ${side} FROM operated_amounts WHERE account_id = $1 AND period = $3), 0)::text AS year,
         coalesce((SELECT sum(amount) FROM transfers WHERE account_id = $1 AND movement_type = $4
                      AND status IN ('COMMITING', 'INICIADO', 'EN_CURSO')), 0)::text AS in_flight`,
      [accountId, month, year, side === 'deposit' ? 'DEPOSIT' : 'WITHDRAW'],
    )) as { month: string; year: string; in_flight: string }[];
    const inFlight = fromDb(row.in_flight);
    if (fromDb(row.month).plus(inFlight).plus(amount).gt(limits.monthly)) {
      throw ValidationFailedError.single(
        'amount',
        'invalid',
        `the monthly ${side} limit of ${whose} would be exceeded`,
      );
    }
    if (fromDb(row.year).plus(inFlight).plus(amount).gt(limits.annual)) {
      throw ValidationFailedError.single(
        'amount',
        'invalid',
        `the annual ${side} limit of ${whose} would be exceeded`,
      );
    }
  }

  private feeOf(account: WalletAccountEntity, amount: Money): Money {
    if (account.feeType === 'PERCENTAGE')
      return roundTo(amount.times(account.feeAmount).div(100), account.currency);
    return fromDb(account.feeAmount);
  }

  private async requireAccount(
    manager: EntityManager,
    principal: Principal,
    id: string,
  ): Promise<WalletAccountEntity> {
    try {
      return await this.accounts.require(manager, principal, id);
    } catch (error) {
      if (error instanceof NotFoundError)
        throw ValidationFailedError.single('accountUUID', 'notfound', 'no such account');
      throw error;
    }
  }

  /**
   * Claims the key inside the transfer's transaction. A concurrent request with the same key waits on the
   * unique index until the first commits (then replays its answer) or rolls back (then runs itself).
   */
  private async claimKey(
    manager: EntityManager,
    appId: string,
    key: string,
    hash: string,
  ): Promise<CreateTransactionResponseDto | undefined> {
    const inserted = (await manager.query(
      `INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING key`,
      [appId, key, hash],
    )) as unknown[];
    if (inserted.length > 0) return undefined;
    const [stored] = (await manager.query(
      `SELECT request_hash, response_body FROM idempotency_keys WHERE app_id = $1 AND key = $2`,
      [appId, key],
    )) as { request_hash: string; response_body: CreateTransactionResponseDto | null }[];
    if (stored.request_hash !== hash) {
      throw ValidationFailedError.single(
        'Idempotency-Key',
        'invalid',
        'this Idempotency-Key was used with a different request',
      );
    }
    return stored.response_body ?? undefined;
  }

  private async insertTransfer(manager: EntityManager, id: string, row: TransferRow): Promise<void> {
    await manager.query(
      `INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
         counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
         linked_transfer_id, amount, currency, fees, taxes, concept, summary)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
      [
        id,
        row.appId,
        row.accountId,
        row.movementType,
        row.status,
        row.route,
        row.counterpartyName,
        row.counterpartyTaxId,
        row.counterpartyIdentifierType,
        row.counterpartyIdentifier,
        row.counterpartyBranch,
        row.counterpartyAccountId,
        row.linkedTransferId,
        toDb(row.amount),
        row.currency,
        toDb(row.fee),
        toDb(row.tax),
        row.concept,
        row.summary,
      ],
    );
    await manager.query(
      `INSERT INTO transfer_status_history (transfer_id, from_status, to_status) VALUES ($1, NULL, 'COMMITING'), ($1, 'COMMITING', $2)`,
      [id, row.status],
    );
  }

  /** Deadlocks and serialization failures are retried here, never shown to the client. */
  private async withRetries<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        const code =
          (error as { driverError?: { code?: string }; code?: string }).driverError?.code ??
          (error as { code?: string }).code;
        if ((code === '40P01' || code === '40001') && attempt < 5) continue;
        throw error;
      }
    }
  }
}

interface TransferBase {
  appId: string;
  accountId: string;
  counterpartyName: string;
  counterpartyTaxId: string;
  counterpartyIdentifierType: 'CBU' | 'CVU';
  counterpartyIdentifier: string;
  counterpartyBranch: string | null;
  currency: string;
  concept: string;
  summary: string | null;
  actor: string;
}

interface TransferRow extends TransferBase {
  movementType: 'DEPOSIT' | 'WITHDRAW';
  route: 'INTERNAL' | 'EXTERNAL';
  status: 'INICIADO' | 'ACREDITADO';
  amount: Money;
  fee: Money;
  tax: Money;
  counterpartyAccountId: string | null;
  linkedTransferId: string | null;
}

/** An account's monthly and annual limits of one side. */
function limitsOf(
  account: WalletAccountEntity,
  side: 'deposit' | 'withdraw',
): { monthly: string; annual: string } {
  return side === 'deposit'
    ? { monthly: account.monthlyDepositLimit, annual: account.annualDepositLimit }
    : { monthly: account.monthlyWithdrawLimit, annual: account.annualWithdrawLimit };
}

/** JSON with sorted keys, so the same request always hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
