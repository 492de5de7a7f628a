import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { actorOf, type Principal } from '#common/auth/principal.js';
import { isUniqueViolation } from '#common/database/sql.js';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { CompaniesService } from '#modules/companies/companies.service.js';
import type { OwnerAccountView } from '#modules/kyc/owners/owner-accounts.port.js';
import { UsersService } from '#modules/users/users.service.js';
import { aliasDigitsFor, ALIAS_PATTERN, generateAlias } from '../alias.js';
import { ALIAS_REGISTRY, type AliasRegistry } from './alias-registry.port.js';
import { buildCvu } from '../cvu.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { Money, parseAmount, toDb, toJson } from '../money.js';
import { periodsOf } from '../periods.js';
import type { BalanceResponseDto, CreateAccountDto, ModifyAccountDto } from './dto/account.dto.js';
import { requireAccount } from './account-lookup.js';
import { accountView } from './account-view.js';
import { BalanceReader } from './balance-reader.js';
import { WalletAccountEntity, type AccountStatus } from './entities/wallet-account.entity.js';
import { auditAppend, requestActor } from '#modules/audit/audit-trail.js';
import { hasTransfersInFlight } from '../transfers-in-flight.js';

/** Allowed status changes (DELETED only through DELETE). */
const TRANSITIONS: Record<AccountStatus, readonly AccountStatus[]> = {
  PENDING: ['ACTIVE', 'INACTIVE'],
  ACTIVE: ['INACTIVE'],
  INACTIVE: ['ACTIVE'],
  DELETED: [],
};

/**
 * Wallet accounts: opening, owner, status, alias, deletion and the balance. Each is a ledger account of the same
 * id; its balance moves only through ledger entries. A client principal reaches its application's accounts, a
 * subject principal only the accounts it owns. Limits and operated amounts: AccountLimitsService; fees:
 * AccountFeesService.
 */
@Injectable()
export class AccountsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly ledger: LedgerService,
    private readonly users: UsersService,
    private readonly companies: CompaniesService,
    private readonly balances: BalanceReader,
    @Inject(ALIAS_REGISTRY) private readonly aliases: AliasRegistry,
  ) {}

  /** 400 `duplicate` at `path` when another institution's account has the alias (AliasRegistry). */
  private async refuseAliasTakenElsewhere(alias: string, path: string): Promise<void> {
    if (await this.aliases.takenElsewhere(alias))
      throw ValidationFailedError.single(path, 'duplicate', 'this alias is taken');
  }

  /** A generated alias no account of another institution has (drawn again until so). */
  private async freshAlias(attempt: number): Promise<string> {
    for (;;) {
      const alias = generateAlias(aliasDigitsFor(attempt));
      if (!(await this.aliases.takenElsewhere(alias))) return alias;
    }
  }

  async create(principal: Principal, input: CreateAccountDto): Promise<OwnerAccountView> {
    if (input.appId.toLowerCase() !== principal.appId) {
      throw ValidationFailedError.single('appId', 'invalid', "appId must be the caller's application");
    }
    const currency = this.config.accountCurrency;
    const limits = {
      annualWithdrawLimit: parseAmount(input.annualWithdrawLimit, currency, 'annualWithdrawLimit'),
      annualDepositLimit: parseAmount(input.annualDepositLimit, currency, 'annualDepositLimit'),
      monthlyWithdrawLimit: parseAmount(input.monthlyWithdrawLimit, currency, 'monthlyWithdrawLimit'),
      monthlyDepositLimit: parseAmount(input.monthlyDepositLimit, currency, 'monthlyDepositLimit'),
    };
    const fee = parseAmount(input.fees, currency, 'fees');
    const ownerId = input.uuid.toLowerCase();
    for (let attempt = 0; ; attempt++) {
      const alias = await this.freshAlias(attempt);
      try {
        return await this.dataSource.transaction(async (manager) => {
          await this.requireOwner(manager, principal, input.ownerType, ownerId);
          const [{ seq }] = (await manager.query(`SELECT nextval('cvu_client_seq')::text AS seq`)) as {
            seq: string;
          }[];
          const accountId = randomUUID();
          await this.ledger.createWalletAccount(manager, accountId, currency);
          await manager.insert(WalletAccountEntity, {
            id: accountId,
            appId: principal.appId,
            ownerType: input.ownerType,
            ownerId,
            cvu: buildCvu(this.config.cvuPspCode, BigInt(seq)),
            alias,
            currency,
            // Opened by the application: ACTIVE. Opened by its user: PENDING until the application activates it
            // (only the application does, decision 0053), since the user chose the limits and fee it opens with.
            status: principal.kind === 'subject' ? 'PENDING' : 'ACTIVE',
            monthlyDepositLimit: toDb(limits.monthlyDepositLimit),
            monthlyWithdrawLimit: toDb(limits.monthlyWithdrawLimit),
            annualDepositLimit: toDb(limits.annualDepositLimit),
            annualWithdrawLimit: toDb(limits.annualWithdrawLimit),
            limitsId: randomUUID(),
            feeType: 'FIXED',
            feeAmount: toDb(fee),
            feesId: randomUUID(),
            operadoId: randomUUID(),
          });
          await auditAppend(manager, requestActor(principal), {
            resourceType: 'account',
            resourceId: accountId,
            outcome: 'created',
          });
          return this.answer(manager, principal, accountId);
        });
      } catch (error) {
        if (isUniqueViolation(error, 'uq_wallet_accounts_owner')) {
          throw ValidationFailedError.single('uuid', 'duplicate', 'the owner already has an account');
        }
        // A generated alias collided with another account's: draw again, with digits (aliasDigitsFor).
        if (isUniqueViolation(error, 'uq_wallet_accounts_alias') && attempt < 5) continue;
        throw error;
      }
    }
  }

  async get(principal: Principal, id: string): Promise<OwnerAccountView> {
    return this.answer(this.dataSource.manager, principal, id);
  }

  /**
   * The account as GET answers it, read through `manager`. A change answers it from inside its own transaction
   * (decision 0094): read after the commit, a deletion committed in between made a committed change answer 404.
   */
  private async answer(manager: EntityManager, principal: Principal, id: string): Promise<OwnerAccountView> {
    return this.view(await this.require(manager, principal, id), manager);
  }

  async modify(principal: Principal, id: string, input: ModifyAccountDto): Promise<OwnerAccountView> {
    if ((input.type === undefined) !== (input.entityId === undefined)) {
      throw ValidationFailedError.single(
        input.type === undefined ? 'type' : 'entityId',
        'required',
        'type and entityId go together',
      );
    }
    if (input.alias !== undefined) await this.refuseAliasTakenElsewhere(input.alias, 'alias');
    try {
      return await this.dataSource.transaction(async (manager) => {
        const account = await this.require(manager, principal, id, true);
        const newStatus = input.status !== undefined && input.status !== account.status;
        const ownerId = input.entityId?.toLowerCase();
        const newOwner =
          input.type !== undefined &&
          ownerId !== undefined &&
          (input.type !== account.ownerType || ownerId !== account.ownerId);
        // Transfers and reversals read the status and the owner under the account's ledger lock: a new status or
        // owner takes that lock too (after the account's row, as close does), so it waits for a transfer that
        // already read the account, and commits after it (decision 0068). An alias, a name or a nationality
        // changes nothing a transfer decides: no wait.
        if (newStatus || newOwner) await this.ledger.lockWallets(manager, [account.id]);
        const changes: Partial<WalletAccountEntity> = {};
        if (input.status !== undefined && newStatus) {
          if (!TRANSITIONS[account.status].includes(input.status)) {
            throw new ForbiddenError(
              'INVALID_STATE',
              `an account cannot go from ${account.status} to ${input.status}`,
            );
          }
          // The owner may stop its own account; making one ACTIVE (out of PENDING, or out of a stop the
          // application may have set) is the application's decision (decision 0011).
          if (input.status === 'ACTIVE' && principal.kind !== 'client') {
            throw new ForbiddenError(
              'INSUFFICIENT_PERMISSIONS',
              'only the application may activate an account',
            );
          }
          changes.status = input.status;
        }
        // Only what differs is a change: a PATCH that sends the values the account has records `unchanged`
        // (decision 0032) and leaves `updated` as it was.
        if (input.alias !== undefined && input.alias !== account.alias) changes.alias = input.alias;
        const name = input.name?.trim();
        if (name !== undefined && name !== account.name) changes.name = name;
        if (input.nationality !== undefined && input.nationality !== account.nationality)
          changes.nationality = input.nationality;
        if (input.type !== undefined && ownerId !== undefined) {
          if (principal.kind !== 'client') {
            throw new ForbiddenError(
              'INSUFFICIENT_PERMISSIONS',
              'only the application may move an account to another owner',
            );
          }
          if (newOwner) {
            await this.requireOwner(manager, principal, input.type, ownerId, 'entityId');
            changes.ownerType = input.type;
            changes.ownerId = ownerId;
          }
        }
        const changed = Object.keys(changes).length > 0;
        if (changed) await manager.update(WalletAccountEntity, { id: account.id }, changes);
        await auditAppend(manager, requestActor(principal), {
          resourceType: 'account',
          resourceId: account.id,
          outcome: changed ? 'updated' : 'unchanged',
        });
        return this.answer(manager, principal, id);
      });
    } catch (error) {
      throw this.uniqueToValidation(error, 'alias', 'entityId');
    }
  }

  async changeAlias(principal: Principal, id: string, newAlias: string): Promise<OwnerAccountView> {
    if (!ALIAS_PATTERN.test(newAlias))
      throw ValidationFailedError.single('newAlias', 'invalid', 'invalid alias');
    await this.refuseAliasTakenElsewhere(newAlias, 'newAlias');
    try {
      return await this.dataSource.transaction(async (manager) => {
        const account = await this.require(manager, principal, id, true);
        const changed = account.alias !== newAlias;
        if (changed) await manager.update(WalletAccountEntity, { id: account.id }, { alias: newAlias });
        await auditAppend(manager, requestActor(principal), {
          resourceType: 'account',
          resourceId: account.id,
          outcome: changed ? 'updated' : 'unchanged',
        });
        return this.answer(manager, principal, id);
      });
    } catch (error) {
      throw this.uniqueToValidation(error, 'newAlias', 'newAlias');
    }
  }

  /** Puts the account in the DELETED state; refused while it holds money. */
  async remove(principal: Principal, id: string): Promise<{ message: string }> {
    await this.dataSource.transaction(async (manager) => {
      const account = await this.require(manager, principal, id, true);
      const balances = await this.ledger.lockWallets(manager, [account.id]);
      if (!(balances.get(account.id) ?? new Money(0)).isZero()) {
        throw new ForbiddenError('INVALID_STATE', 'the account holds money');
      }
      if (await hasTransfersInFlight(manager, [account.id])) {
        throw new ForbiddenError('INVALID_STATE', 'the account has transfers in flight');
      }
      await manager.update(
        WalletAccountEntity,
        { id: account.id },
        { status: 'DELETED', deletedAt: new Date() },
      );
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'account',
        resourceId: account.id,
        outcome: 'deleted',
      });
    });
    return { message: 'Account deleted' };
  }

  /** One query, no entity: the most frequent read of all. Scoped like require(): the app, and a user's own. */
  async balance(principal: Principal, id: string): Promise<BalanceResponseDto> {
    const balance = await this.balances.balanceOf(principal, id);
    if (balance === null) throw new NotFoundError(id, 'Account not found');
    const accountId = id.toLowerCase();
    return { id: accountId, accountId, balance: toJson(balance) };
  }

  /** Sets the balance by posting the difference against the adjustments account (never overwritten in place). */
  async setBalance(principal: Principal, id: string, target: number): Promise<{ message: string }> {
    await this.dataSource.transaction(async (manager) => {
      const account = await this.require(manager, principal, id, true);
      const wanted = parseAmount(target, account.currency, 'balance');
      const balances = await this.ledger.lockWallets(manager, [account.id]);
      const difference = wanted.minus(balances.get(account.id) ?? 0);
      await auditAppend(manager, requestActor(principal), {
        resourceType: 'account',
        resourceId: account.id,
        outcome: difference.isZero() ? 'unchanged' : 'balance set',
      });
      if (difference.isZero()) return;
      const adjustments = await this.ledger.systemAccount(manager, 'ADJUSTMENTS', account.currency);
      await this.ledger.post(manager, {
        appId: account.appId,
        kind: 'BALANCE_ADJUSTMENT',
        reference: account.id,
        description: `balance set to ${toDb(wanted)}`,
        actor: actorOf(principal),
        lines: [
          { accountId: account.id, amount: difference, currency: account.currency },
          { accountId: adjustments, amount: difference.negated(), currency: account.currency },
        ],
      });
    });
    return { message: 'Balance updated' };
  }

  /** The account (not deleted), scoped to the principal, locked when asked; 404 otherwise. */
  require(
    manager: EntityManager,
    principal: Principal,
    id: string,
    lock = false,
  ): Promise<WalletAccountEntity> {
    return requireAccount(manager, principal, id, lock);
  }

  async view(account: WalletAccountEntity, manager = this.dataSource.manager): Promise<OwnerAccountView> {
    const [row] = (await manager.query(`SELECT balance::text AS balance FROM ledger_accounts WHERE id = $1`, [
      account.id,
    ])) as { balance: string }[];
    const { month } = periodsOf(new Date(), this.config.operationsTimeZone);
    const [operated] = (await manager.query(
      `SELECT deposit::text AS deposit, withdraw::text AS withdraw FROM operated_amounts WHERE account_id = $1 AND period = $2`,
      [account.id, month],
    )) as { deposit: string; withdraw: string }[];
    return accountView(account, row?.balance ?? '0', operated?.deposit ?? '0', operated?.withdraw ?? '0');
  }

  private async requireOwner(
    manager: EntityManager,
    principal: Principal,
    ownerType: 'USER' | 'COMPANY',
    ownerId: string,
    path = 'uuid',
  ): Promise<void> {
    try {
      // Locked: an owner being deleted concurrently cannot end up owning a new account.
      if (ownerType === 'USER') await this.users.find(manager, principal, ownerId, true);
      else await this.companies.find(manager, principal, ownerId, true);
    } catch (error) {
      if (error instanceof NotFoundError) {
        throw ValidationFailedError.single(
          path,
          'notfound',
          `no such ${ownerType === 'USER' ? 'user' : 'company'}`,
        );
      }
      throw error;
    }
  }

  /** A unique violation as a 400 duplicate at the path of the field that caused it. */
  private uniqueToValidation(error: unknown, aliasPath: string, ownerPath: string): unknown {
    if (isUniqueViolation(error, 'uq_wallet_accounts_alias')) {
      return ValidationFailedError.single(aliasPath, 'duplicate', 'this alias is taken');
    }
    if (isUniqueViolation(error, 'uq_wallet_accounts_owner')) {
      return ValidationFailedError.single(ownerPath, 'duplicate', 'the new owner already has an account');
    }
    return error;
  }
}
