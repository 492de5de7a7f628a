import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { actorOf, type Principal } from '#common/auth/principal.js';
import { ReadDatabase } from '#common/database/read-database.js';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { handOver } from '#common/queue/hand-over.js';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor, type Page } from '#common/http/pagination.js';
import { uuidv7 } from '#common/ids/uuid-v7.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { cuitProblem } from '#modules/kyc/tax-id.js';
import { WEBHOOK_EVENTS } from '#modules/webhooks/webhook-events.js';
import { WebhooksService } from '#modules/webhooks/webhooks.service.js';
import { AccountLimitsService } from '#modules/wallet/accounts/account-limits.service.js';
import { AccountsService } from '#modules/wallet/accounts/accounts.service.js';
import { isValidCbu } from '#modules/wallet/cvu.js';
import { LedgerService } from '#modules/wallet/ledger/ledger.service.js';
import { boundedAmount, MINOR_UNITS, parseAmount, roundTo, toDb } from '#modules/wallet/money.js';
import { CLEARING_RAIL, type ClearingRail } from './clearing/clearing-rail.port.js';
import type {
  CreateTransactionDto,
  CreateTransactionResponseDto,
  TransactionInfoDto,
  TransactionListQueryDto,
} from './dto/transfer.dto.js';
import { TransferBatcher } from './transfer-batcher.js';
import { refusalOf } from './transfer-errors.js';
import { encodeTransferRequest } from './transfer-function.contract.js';
import { createdView, TransferViews } from './transfer-views.js';
import { TransferWriter } from './transfer-writer.js';
import { auditAppend, type AuditActor } from '#modules/audit/audit-trail.js';
import { hashOf, requestHash } from './request-hash.js';
import { checkIdempotencyKey } from '#common/http/idempotency-key.js';

/**
 * POST /wallet/transactions and the reads. A transfer is created by one call
 * of the database function wallet_create_transfers (one round trip, no entity
 * hydration): internal transfers settle in it (both sides ACREDITADO);
 * external ones hold the money and go to the clearing rail afterwards. Every
 * check that refuses (funds, limits, state) runs before anything is written,
 * under the sender's ledger row lock, so two concurrent transfers cannot both
 * spend the same money.
 */
@Injectable()
export class TransfersService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly ledger: LedgerService,
    private readonly accounts: AccountsService,
    private readonly limits: AccountLimitsService,
    private readonly webhooks: WebhooksService,
    private readonly views: TransferViews,
    private readonly reads: ReadDatabase,
    private readonly batcher: TransferBatcher,
    private readonly writer: TransferWriter,
    @Inject(CLEARING_RAIL) private readonly rail: ClearingRail,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('TransfersService');
  }

  async create(
    principal: Principal,
    input: CreateTransactionDto,
    idempotencyKey?: string,
  ): Promise<CreateTransactionResponseDto> {
    checkIdempotencyKey(idempotencyKey);
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
    // The currency-independent checks here; decimals, sign and minimum against the account's currency in the
    // database function.
    const amount = boundedAmount(String(input.amount), 'amount');

    const accountId = input.accountUUID.toLowerCase();
    // The new transfer's id, made here so that a call whose answer is lost can be looked up (decision 0066).
    const id = uuidv7();
    // Everything the transfer writes happens in one database call, grouped with others (decisions/0015); the
    // request is the function's contract (transfer-function.contract.ts).
    const parameters = encodeTransferRequest({
      id,
      appId: principal.appId,
      subject: principal.kind === 'subject' ? principal.subject : null,
      accountId,
      amount: toDb(amount),
      movementType: input.movementType,
      counterparty: {
        name: counterParty.name.trim(),
        taxId: counterParty.cValue.replace(/\D/g, ''),
        identifierType: counterParty.identifierType,
        identifier: counterParty.identifier,
        branch: counterParty.branchName || null,
      },
      concept: input.concept,
      summary: input.summary ?? null,
      actor: actorOf(principal),
      requestId: principal.request?.id ?? null,
      route: principal.request?.action ?? 'internal',
      taxRate: this.config.transferTaxRate,
      minorUnits: MINOR_UNITS,
      timeZone: this.config.operationsTimeZone,
      idempotencyKey: idempotencyKey ?? null,
      requestHash: idempotencyKey === undefined ? null : requestHash(principal, input),
    });
    const result = await this.batcher.create(
      parameters,
      { id, subject: principal.kind === 'subject' ? principal.subject : null },
      accountId,
      counterParty.identifier,
    );
    if ('replay' in result) return createdView(result.replay);
    // After commit: should this hand-over fail or be late, the clearing recovery sweep submits the transfer.
    if (result.submit) {
      const transferId = result.row.id;
      await handOver(() => this.rail.submit(transferId), this.logger, 'an external transfer', { transferId });
    }
    return createdView(result.row);
  }

  /**
   * Money arriving from the rail into one of this service's CVUs (someone at another institution pays in):
   * a DEPOSIT that is ACREDITADO at once (settlement → account), announced to the account's application with
   * transfer_update. Refused, writing nothing, when the account cannot receive it.
   */
  async inbound(
    input: {
      cvu: string;
      amount: number;
      fromIdentifier: string;
      fromName: string;
      fromTaxId: string;
      concept: string;
      /** The rail's own id of the credit: a second credit with it answers the first (24 to 48 hours). */
      reference?: string;
    },
    actor: AuditActor,
  ): Promise<InboundCredit> {
    if (!isValidCbu(input.fromIdentifier)) {
      throw ValidationFailedError.single(
        'from',
        'invalid',
        'the paying account must be a CBU/CVU with valid check digits',
      );
    }
    const taxProblem = cuitProblem(input.fromTaxId, ['person', 'entity']);
    if (taxProblem) throw ValidationFailedError.single('cuit', 'invalid', `cuit ${taxProblem}`);
    // As a counterparty's name through the API (CounterPartyDto): 1-200 characters.
    const fromName = input.fromName.trim();
    if (fromName.length === 0 || fromName.length > 200)
      throw ValidationFailedError.single('name', 'invalid', 'name must be 1 to 200 characters');
    const work = this.dataSource.transaction(async (manager) => {
      // With the account, the new transfer's id: time-ordered, uuidv7(), as every transfer's (decisions 0042, 0050).
      // A CVU is never reused, deleted accounts included: a credit's reference is answered even after its account
      // was closed (the money was credited, then moved out), before the account's state is looked at.
      const [row] = (await manager.query(
        `SELECT id, app_id, status, uuidv7()::text AS transfer_id FROM wallet_accounts WHERE cvu = $1`,
        [input.cvu],
      )) as { id: string; app_id: string; status: string; transfer_id: string }[];
      if (!row) throw new NotFoundError(input.cvu, 'No account with that CVU');
      const claim =
        input.reference === undefined ? undefined : await claimRailReference(manager, row.app_id, input);
      if (claim && 'replay' in claim) return claim.replay;
      if (row.status === 'DELETED') throw new NotFoundError(input.cvu, 'No account with that CVU');
      // Locked, so its state is the one after any close or status change that held the row: as an account is
      // closed (DELETE) under this lock, a credit never lands in a closed account.
      const account = await this.accounts.require(
        manager,
        { kind: 'client', appId: row.app_id },
        row.id,
        true,
      );
      if (account.status !== 'ACTIVE')
        throw new ForbiddenError('INVALID_STATE', `the account is ${account.status}`);
      const amount = parseAmount(input.amount, account.currency, 'amount', { min: 1 });
      await this.ledger.lockWallets(manager, [account.id]);
      // The period of the credit's created_at (the transaction's now()), not of this process's clock: decision 0098.
      await manager.query(
        `SELECT wallet_check_limits($1, 'deposit', $2, $3, $4, p.month, p.year, 'the account')
           FROM wallet_periods($5) p`,
        [
          account.id,
          toDb(amount),
          account.monthlyDepositLimit,
          account.annualDepositLimit,
          this.config.operationsTimeZone,
        ],
      );
      const settlement = await this.ledger.systemAccount(manager, 'SETTLEMENT', account.currency);
      // Every credit pays the tax on what arrives; the fee is the initiator's, and the account did not initiate a
      // push from the rail (decision 0098): as an internal transfer's receiver, amount − tax to the account.
      const tax = roundTo(amount.times(this.config.transferTaxRate), account.currency);
      const id = row.transfer_id;
      await this.ledger.post(manager, {
        appId: account.appId,
        kind: 'INBOUND_TRANSFER',
        reference: id,
        actor: 'system:clearing-inbound',
        lines: [
          { accountId: settlement, amount: amount.negated(), currency: account.currency },
          { accountId: account.id, amount: amount.minus(tax), currency: account.currency },
          ...(tax.isZero()
            ? []
            : [
                {
                  accountId: await this.ledger.systemAccount(manager, 'TAX_PAYABLE', account.currency),
                  amount: tax,
                  currency: account.currency,
                },
              ]),
        ],
      });
      await this.writer.recordInbound(manager, {
        id,
        appId: account.appId,
        accountId: account.id,
        counterpartyName: fromName,
        counterpartyTaxId: input.fromTaxId.replace(/\D/g, ''),
        counterpartyIdentifierType: input.fromIdentifier.startsWith('000') ? 'CVU' : 'CBU',
        counterpartyIdentifier: input.fromIdentifier,
        amount,
        taxes: tax,
        currency: account.currency,
        concept: input.concept,
      });
      await this.limits.addOperated(manager, account.id, 'deposit', amount);
      await this.webhooks.emit(manager, {
        appId: account.appId,
        event: WEBHOOK_EVENTS.transferUpdate,
        subject: id,
        data: { uuid: id, movementType: 'DEPOSIT', backStatus: 'PENDING', newStatus: 'ACCEPTED' },
      });
      await auditAppend(
        manager,
        { ...actor, appId: account.appId },
        { resourceType: 'transfer', resourceId: id, outcome: 'ACREDITADO' },
      );
      const credit: InboundCredit = { transferId: id, accountId: account.id, status: 'ACREDITADO' };
      if (claim) await claim.answer(credit);
      return credit;
    });
    return work.catch((error: unknown) => {
      throw refusalOf(error) ?? error;
    });
  }

  async get(principal: Principal, id: string): Promise<TransactionInfoDto> {
    const found = await this.views.find(principal, id);
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
    const rows = await this.views.list(this.reads, principal, filter, limit + 1, decodeCursor(cursor));
    const more = rows.length > limit;
    const served = more ? rows.slice(0, limit) : rows;
    const last = served[served.length - 1];
    return {
      items: served.map((row) => row.view),
      nextCursor: more && last ? encodeCursor({ createdAt: last.createdAt, id: last.view.uuid }) : null,
    };
  }
}

/** A credit from the rail, as the CLI prints it. */
export interface InboundCredit {
  transferId: string;
  accountId: string;
  status: 'ACREDITADO';
}

/**
 * Claims the rail's reference of an inbound credit in `idempotency_keys` (the account's application, key
 * `inbound <reference>`, the same table and pruning as an Idempotency-Key), in the credit's transaction: a rail
 * message delivered again, or a command run again after a failure whose outcome was unclear, answers the credit
 * already made instead of crediting twice. A twin sent at once waits for the first's commit on the key's row. The
 * same reference with other details is refused.
 */
async function claimRailReference(
  manager: EntityManager,
  appId: string,
  input: { reference?: string; cvu: string; amount: number; fromIdentifier: string },
): Promise<{ replay: InboundCredit } | { answer: (credit: InboundCredit) => Promise<void> }> {
  const key = `inbound ${input.reference}`;
  const hash = hashOf({ cvu: input.cvu, amount: input.amount, from: input.fromIdentifier });
  const claimed = (await manager.query(
    `INSERT INTO idempotency_keys (app_id, key, request_hash) VALUES ($1, $2, $3)
     ON CONFLICT DO NOTHING RETURNING key`,
    [appId, key, hash],
  )) as unknown[];
  if (claimed.length === 0) {
    const [stored] = (await manager.query(
      `SELECT request_hash, response_body FROM idempotency_keys WHERE app_id = $1 AND key = $2`,
      [appId, key],
    )) as { request_hash: string; response_body: InboundCredit | null }[];
    if (stored?.request_hash === hash && stored.response_body) return { replay: stored.response_body };
    throw ValidationFailedError.single(
      'reference',
      'duplicate',
      'this reference was used for another credit',
    );
  }
  return {
    answer: async (credit) => {
      await manager.query(
        `UPDATE idempotency_keys SET response_status = 201, response_body = $3 WHERE app_id = $1 AND key = $2`,
        [appId, key, JSON.stringify(credit)],
      );
    },
  };
}
