import type pg from 'pg';
import type { DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../migrations/index.js';
import { recordBackend } from '#common/database/backend-identity.js';
import { GuardedPgClient } from '#common/database/guarded-pg-client.js';
import { DEFAULT_DB_STATEMENT_TIMEOUT_MS } from '#config/app-config.js';
import { RateLimitCounterEntity } from '#common/http/entities/rate-limit-counter.entity.js';
import { ApplicationKeyEntity } from '#modules/apps/entities/application-key.entity.js';
import { ApplicationEntity } from '#modules/apps/entities/application.entity.js';
import { AuditRecordEntity } from '#modules/audit/entities/audit-record.entity.js';
import { UsedAssertionEntity } from '#modules/auth/entities/used-assertion.entity.js';
import { CompanyKycDataEntity } from '#modules/companies/entities/company-kyc-data.entity.js';
import { CompanyEntity } from '#modules/companies/entities/company.entity.js';
import { DocumentEntity } from '#modules/kyc/documents/entities/document.entity.js';
import { KycHistoryEntity } from '#modules/kyc/history/kyc-history.entity.js';
import { KycSessionEntity, KycSessionStepEntity } from '#modules/kyc/sessions/entities/kyc-session.entity.js';
import { UserKycDataEntity } from '#modules/users/entities/user-kyc-data.entity.js';
import { UserEntity } from '#modules/users/entities/user.entity.js';
import { SmsMessageEntity } from '#modules/mobile/entities/sms-message.entity.js';
import {
  OperatedAmountEntity,
  WalletAccountEntity,
} from '#modules/wallet/accounts/entities/wallet-account.entity.js';
import {
  JournalEntryEntity,
  LedgerAccountEntity,
  PostingEntity,
} from '#modules/wallet/ledger/entities/ledger.entities.js';
import { IdempotencyKeyEntity } from '#modules/transfers/entities/idempotency-key.entity.js';
import { TransferStatusHistoryEntity } from '#modules/transfers/entities/transfer-status-history.entity.js';
import { TransferEntity } from '#modules/transfers/entities/transfer.entity.js';
import { UnclaimedReturnEntity } from '#modules/transfers/entities/unclaimed-return.entity.js';
import { WebhookAttemptEntity } from '#modules/webhooks/entities/webhook-attempt.entity.js';
import { WebhookEventEntity } from '#modules/webhooks/entities/webhook-event.entity.js';

/**
 * Composition root of the persistence layer: every entity and migration, one
 * set of options for the API, the worker, the CLI, the migration runner and the
 * tests. The schema comes from migrations only (synchronize is never on).
 */
export const ENTITIES = [
  ApplicationEntity,
  ApplicationKeyEntity,
  UsedAssertionEntity,
  WebhookEventEntity,
  WebhookAttemptEntity,
  UserEntity,
  CompanyEntity,
  UserKycDataEntity,
  CompanyKycDataEntity,
  KycHistoryEntity,
  DocumentEntity,
  KycSessionEntity,
  KycSessionStepEntity,
  SmsMessageEntity,
  LedgerAccountEntity,
  JournalEntryEntity,
  PostingEntity,
  WalletAccountEntity,
  OperatedAmountEntity,
  TransferEntity,
  TransferStatusHistoryEntity,
  IdempotencyKeyEntity,
  UnclaimedReturnEntity,
  AuditRecordEntity,
  RateLimitCounterEntity,
];

export function dataSourceOptions(
  url: string,
  poolSize: number,
  applicationName: string,
  statementTimeoutMs = DEFAULT_DB_STATEMENT_TIMEOUT_MS,
): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    migrationsRun: false,
    logging: false,
    extra: {
      // A connection terminated while the pool hands it over must not crash the process (see the class).
      Client: GuardedPgClient,
      // Each new connection's backend (pid and start), read once: a money call whose connection is lost can then
      // be made final (its backend ended) and looked into (decision 0066).
      onConnect: recordBackend,
      max: poolSize,
      application_name: applicationName,
      connectionTimeoutMillis: 10_000,
      // Guard rails: no statement or idle transaction holds locks forever (docs/decisions/0014).
      options: `-c statement_timeout=${statementTimeoutMs} -c idle_in_transaction_session_timeout=60000`,
    },
  };
}

/** A pg Pool beside the DataSource (the streaming replica's, decision 0033): the same client and guard rails. */
export function replicaPoolConfig(
  url: string,
  poolSize: number,
  applicationName: string,
  statementTimeoutMs: number,
): pg.PoolConfig {
  const { extra } = dataSourceOptions(url, poolSize, applicationName, statementTimeoutMs) as {
    extra: pg.PoolConfig;
  };
  // Nothing is written through the replica: its connections need no backend recorded.
  return { connectionString: url, ...extra, onConnect: undefined };
}
