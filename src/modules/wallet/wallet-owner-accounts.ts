import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import type { OwnerAccounts, OwnerAccountView } from '#modules/kyc/owners/owner-accounts.port.js';
import { accountView } from './accounts/account-view.js';
import { WalletAccountEntity } from './accounts/entities/wallet-account.entity.js';
import { fromDb } from './money.js';
import { periodsOf } from './periods.js';
import { hasTransfersInFlight } from './transfers-in-flight.js';

/** The read port of users and companies onto the wallet: an owner's account, and whether it holds money. */
@Injectable()
export class WalletOwnerAccounts implements OwnerAccounts {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async accountsOf(
    appId: string,
    ownerIds: readonly string[],
    manager: EntityManager = this.dataSource.manager,
  ): Promise<Map<string, OwnerAccountView>> {
    if (ownerIds.length === 0) return new Map();
    const { month } = periodsOf(new Date(), this.config.operationsTimeZone);
    const rows = await manager
      .getRepository(WalletAccountEntity)
      .createQueryBuilder('w')
      .innerJoin('ledger_accounts', 'l', 'l.id = w.id')
      .leftJoin('operated_amounts', 'o', 'o.account_id = w.id AND o.period = :month', { month })
      .select('w')
      .addSelect('l.balance::text', 'balance')
      .addSelect(`coalesce(o.deposit, 0)::text`, 'deposit')
      .addSelect(`coalesce(o.withdraw, 0)::text`, 'withdraw')
      .where(`w.app_id = :appId AND w.owner_id = ANY(:ownerIds) AND w.status <> 'DELETED'`, {
        appId,
        ownerIds,
      })
      .getRawAndEntities();
    return new Map(
      rows.entities.map((account, i) => {
        const raw = rows.raw[i] as { balance: string; deposit: string; withdraw: string };
        return [account.ownerId, accountView(account, raw.balance, raw.deposit, raw.withdraw)];
      }),
    );
  }

  async closeForOwnerDeletion(
    manager: EntityManager,
    appId: string,
    ownerId: string,
  ): Promise<{ refused: 'holds-money' | 'in-flight' } | { closed: readonly string[] }> {
    const accounts = (await manager.query(
      `SELECT w.id, l.balance::text AS balance FROM wallet_accounts w JOIN ledger_accounts l ON l.id = w.id
        WHERE w.app_id = $1 AND w.owner_id = $2 AND w.status <> 'DELETED'
        ORDER BY w.id FOR UPDATE OF w, l`,
      [appId, ownerId],
    )) as { id: string; balance: string }[];
    if (accounts.some((account) => !fromDb(account.balance).isZero())) return { refused: 'holds-money' };
    const ids = accounts.map((account) => account.id);
    if (await hasTransfersInFlight(manager, ids)) return { refused: 'in-flight' };
    if (accounts.length > 0) {
      await manager.query(
        `UPDATE wallet_accounts SET status = 'DELETED', deleted_at = now() WHERE id = ANY($1::uuid[])`,
        [ids],
      );
    }
    return { closed: ids };
  }
}
