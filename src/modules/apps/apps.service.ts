import { randomUUID, type KeyObject } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { JWK } from 'jose';
import { DataSource } from 'typeorm';
import { NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { VerifiedTokenCache } from '#common/auth/verified-token-cache.js';
import { assertPublicHost, PrivateAddressError } from '#common/net/public-address.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { ApplicationKeyEntity } from './entities/application-key.entity.js';
import { ApplicationEntity, type ApplicationStatus } from './entities/application.entity.js';
import { KEY_ID_PATTERN, keyObjectFromJwk, parsePublicKey } from './public-key.js';
import { UnknownKeyNames } from './unknown-key-names.js';
import { auditAppend, type AuditActor } from '#modules/audit/audit-trail.js';
import { UUID_PATTERN } from '#common/ids/uuid.js';

export interface CreatedApp {
  appId: string;
  clientId: string;
  keyId: string;
}

export interface AppSummary {
  appId: string;
  name: string;
  status: string;
  webhookUrl: string | null;
  createdAt: string;
  keys: { keyId: string; status: string; createdAt: string; revokedAt: string | null }[];
}

/** The application registry: each application is a tenant, with its keys and webhook URL. */
@Injectable()
export class AppsService {
  /** Parsed public keys by key id (a thumbprint: the same id is always the same key). */
  private readonly parsedKeys = new Map<string, KeyObject>();
  /** Applications and keys that a lookup did not find, for AUTH_CACHE_MS. */
  private readonly unknownKeys: UnknownKeyNames;
  /** Key lookups in flight, by keyName: each is shared by the requests that ask for the same key meanwhile. */
  private readonly keyLookups = new Map<string, Promise<JWK | undefined>>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly verified: VerifiedTokenCache,
  ) {
    this.unknownKeys = new UnknownKeyNames(config.authCacheMs);
  }

  /** Each change below appends an audit record of `actor` (the CLI's OS user) in its transaction. */
  async create(
    input: { name: string; publicKey: string; webhookUrl?: string },
    actor: AuditActor,
  ): Promise<CreatedApp> {
    const name = input.name.trim();
    if (name.length === 0 || name.length > 200) {
      throw ValidationFailedError.single('name', 'invalid', 'name must be 1 to 200 characters');
    }
    const webhookUrl = input.webhookUrl === undefined ? null : await this.checkWebhookUrl(input.webhookUrl);
    const key = await parsePublicKey(input.publicKey);
    const appId = randomUUID();
    await this.dataSource.transaction(async (manager) => {
      await manager.insert(ApplicationEntity, { id: appId, name, status: 'active', webhookUrl });
      await manager.insert(ApplicationKeyEntity, {
        appId,
        keyId: key.keyId,
        publicJwk: key.jwk,
        status: 'active',
      });
      await auditAppend(
        manager,
        { ...actor, appId },
        { resourceType: 'application', resourceId: appId, outcome: 'created' },
        { resourceType: 'application_key', resourceId: key.keyId, outcome: 'created' },
      );
    });
    return { appId, clientId: appId, keyId: key.keyId };
  }

  async list(): Promise<AppSummary[]> {
    const apps = await this.dataSource.getRepository(ApplicationEntity).find({ order: { createdAt: 'ASC' } });
    const keys = await this.dataSource
      .getRepository(ApplicationKeyEntity)
      .find({ order: { createdAt: 'ASC' } });
    return apps.map((app) => ({
      appId: app.id,
      name: app.name,
      status: app.status,
      webhookUrl: app.webhookUrl,
      createdAt: app.createdAt.toISOString(),
      keys: keys
        .filter((key) => key.appId === app.id)
        .map((key) => ({
          keyId: key.keyId,
          status: key.status,
          createdAt: key.createdAt.toISOString(),
          revokedAt: key.revokedAt?.toISOString() ?? null,
        })),
    }));
  }

  async setWebhook(
    appId: string,
    url: string,
    actor: AuditActor,
  ): Promise<{ appId: string; webhookUrl: string }> {
    await this.require(appId);
    const webhookUrl = await this.checkWebhookUrl(url);
    await this.dataSource.transaction(async (manager) => {
      const app = await manager.findOne(ApplicationEntity, {
        where: { id: appId },
        // FOR NO KEY UPDATE: two set-webhook commands wait for each other; the application's new users, accounts
        // and keys (whose keys reference this row) do not wait.
        lock: { mode: 'for_no_key_update' },
      });
      const changed = app?.webhookUrl !== webhookUrl;
      if (changed) await manager.update(ApplicationEntity, { id: appId }, { webhookUrl });
      await auditAppend(
        manager,
        { ...actor, appId },
        { resourceType: 'application', resourceId: appId, outcome: changed ? 'webhook set' : 'unchanged' },
      );
    });
    return { appId, webhookUrl };
  }

  /**
   * Disables or enables an application. A disabled application's access tokens and user tokens are refused, and
   * the token endpoint issues it none (`isActive`, `findActiveKey`): in every process within AUTH_CACHE_MS, as a
   * revoked key. Its data, its money and its webhooks stay (decision 0092). The same status again records
   * `unchanged`.
   */
  async setStatus(
    appId: string,
    status: ApplicationStatus,
    actor: AuditActor,
  ): Promise<{ appId: string; status: ApplicationStatus }> {
    const { id } = await this.require(appId);
    await this.dataSource.transaction(async (manager) => {
      // FOR NO KEY UPDATE, as setWebhook: two such commands wait for each other, the application's rows do not.
      const app = await manager.findOne(ApplicationEntity, {
        where: { id },
        lock: { mode: 'for_no_key_update' },
      });
      const changed = app?.status !== status;
      if (changed) await manager.update(ApplicationEntity, { id }, { status });
      await auditAppend(
        manager,
        { ...actor, appId: id },
        {
          resourceType: 'application',
          resourceId: id,
          outcome: !changed ? 'unchanged' : status === 'disabled' ? 'disabled' : 'enabled',
        },
      );
    });
    // In this process at once (another finds out within AUTH_CACHE_MS): its verified tokens, its remembered miss.
    this.verified.clear();
    this.unknownKeys.forget(id);
    return { appId: id, status };
  }

  async addKey(
    appId: string,
    publicKey: string,
    actor: AuditActor,
  ): Promise<{ appId: string; keyId: string }> {
    await this.require(appId);
    const key = await parsePublicKey(publicKey);
    await this.dataSource.transaction(async (manager) => {
      const existing = await manager.findOneBy(ApplicationKeyEntity, { appId, keyId: key.keyId });
      if (existing)
        throw ValidationFailedError.single('publicKey', 'duplicate', 'this key is already registered');
      await manager.insert(ApplicationKeyEntity, {
        appId,
        keyId: key.keyId,
        publicJwk: key.jwk,
        status: 'active',
      });
      await auditAppend(
        manager,
        { ...actor, appId },
        { resourceType: 'application_key', resourceId: key.keyId, outcome: 'created' },
      );
    });
    // A try with it just before is forgotten here; another process (the CLI) finds it within AUTH_CACHE_MS.
    this.unknownKeys.forget(keyName(appId.toLowerCase(), key.keyId));
    return { appId, keyId: key.keyId };
  }

  async revokeKey(
    appId: string,
    keyId: string,
    actor: AuditActor,
  ): Promise<{ appId: string; keyId: string; status: 'revoked' }> {
    await this.require(appId);
    await this.dataSource.transaction(async (manager) => {
      const result = await manager.update(
        ApplicationKeyEntity,
        { appId, keyId, status: 'active' },
        { status: 'revoked', revokedAt: new Date() },
      );
      if (!result.affected)
        throw new NotFoundError(keyId, 'No active key with that keyId for this application');
      await auditAppend(
        manager,
        { ...actor, appId },
        { resourceType: 'application_key', resourceId: keyId, outcome: 'revoked' },
      );
    });
    this.verified.clear(); // user tokens signed with it stop working now, not after AUTH_CACHE_MS
    return { appId, keyId, status: 'revoked' };
  }

  /**
   * The active key `keyId` of the active application `appId`, or undefined. Runs for every user token and client
   * assertion that the verified-token cache does not hold, before its signature is checked, so a name that finds
   * nothing is remembered for AUTH_CACHE_MS (UnknownKeyNames, decision 0057) and lookups of one name at once
   * share one query.
   */
  async findActiveKey(appId: string, keyId: string): Promise<KeyObject | undefined> {
    if (!UUID_PATTERN.test(appId) || !KEY_ID_PATTERN.test(keyId)) return undefined;
    const app = appId.toLowerCase();
    const name = keyName(app, keyId);
    if (this.unknownKeys.has(app) || this.unknownKeys.has(name)) return undefined;
    let lookup = this.keyLookups.get(name);
    if (!lookup) {
      const started = this.lookUpKey(app, keyId).finally(() => {
        if (this.keyLookups.get(name) === started) this.keyLookups.delete(name);
      });
      this.keyLookups.set(name, (lookup = started));
    }
    const jwk = await lookup;
    if (!jwk) return undefined;
    // The key id is the key's RFC 7638 thumbprint, so a parsed key can be kept by it (the status is read above).
    let key = this.parsedKeys.get(keyId);
    if (!key) {
      if (this.parsedKeys.size >= 10_000) this.parsedKeys.clear();
      key = keyObjectFromJwk(jwk);
      this.parsedKeys.set(keyId, key);
    }
    return key;
  }

  /** One query (plain SQL: see findActiveKey); a miss is remembered by the application, or by the key. */
  private async lookUpKey(appId: string, keyId: string): Promise<JWK | undefined> {
    const started = Date.now();
    const [row] = (await this.dataSource.query(
      `SELECT a.status = 'active' AS active, k.public_jwk FROM applications a
         LEFT JOIN application_keys k ON k.app_id = a.id AND k.key_id = $2 AND k.status = 'active'
        WHERE a.id = $1`,
      [appId, keyId],
    )) as { active: boolean; public_jwk: JWK | null }[];
    if (!row?.active) {
      this.unknownKeys.remember(appId, started); // none of its key ids is looked up for AUTH_CACHE_MS
      return undefined;
    }
    if (!row.public_jwk) this.unknownKeys.remember(keyName(appId, keyId), started);
    return row.public_jwk ?? undefined;
  }

  /**
   * Whether the application is active and, given a `keyId` (an access token's `app_key`), that key too is not
   * revoked. Plain SQL: this runs for every application token the verified-token cache does not hold.
   */
  async isActive(appId: string, keyId?: string): Promise<boolean> {
    if (!UUID_PATTERN.test(appId)) return false;
    const rows = (await (keyId === undefined
      ? this.dataSource.query(`SELECT 1 FROM applications WHERE id = $1 AND status = 'active'`, [appId])
      : this.dataSource.query(
          `SELECT 1 FROM application_keys k JOIN applications a ON a.id = k.app_id
            WHERE k.app_id = $1 AND k.key_id = $2 AND k.status = 'active' AND a.status = 'active'`,
          [appId, keyId],
        ))) as unknown[];
    return rows.length > 0;
  }

  /**
   * Format, then SSRF: a host that resolves to a non-public address is refused (unless
   * WEBHOOK_ALLOW_PRIVATE_URLS). A host that does not resolve (yet) is accepted: every delivery checks the
   * address it actually connects to.
   */
  private async checkWebhookUrl(raw: string): Promise<string> {
    const url = validateWebhookUrl(raw);
    try {
      await assertPublicHost(new URL(url), this.config.webhookAllowPrivateUrls);
    } catch (error) {
      if (error instanceof PrivateAddressError) {
        throw ValidationFailedError.single(
          'webhookUrl',
          'invalid',
          `webhook URLs must point to public addresses: ${error.message}`,
        );
      }
    }
    return url;
  }

  private async require(appId: string): Promise<ApplicationEntity> {
    const app = UUID_PATTERN.test(appId)
      ? await this.dataSource.getRepository(ApplicationEntity).findOneBy({ id: appId })
      : null;
    if (!app) throw new NotFoundError(appId, 'Application not found');
    return app;
  }
}

/** The name of one application key in UnknownKeyNames and the lookups in flight (an application's is its id). */
function keyName(appId: string, keyId: string): string {
  return `${appId} ${keyId}`;
}

/** Webhook URLs are absolute http(s) URLs without credentials; delivery applies the SSRF rules. */
export function validateWebhookUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw ValidationFailedError.single(
      'webhookUrl',
      'invalid',
      'webhook URL must be an absolute http(s) URL',
    );
  }
  if (!['http:', 'https:'].includes(url.protocol)) {
    throw ValidationFailedError.single('webhookUrl', 'invalid', 'webhook URL must use http or https');
  }
  if (url.username || url.password) {
    throw ValidationFailedError.single('webhookUrl', 'invalid', 'webhook URL must not carry credentials');
  }
  return url.toString();
}
