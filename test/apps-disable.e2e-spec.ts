import os from 'node:os';
import request from 'supertest';
import { AppsService } from '../src/modules/apps/apps.service.js';
import { cliActor } from '../src/modules/audit/audit-trail.js';
import {
  accessToken,
  clientAssertion,
  registerClient,
  subjectToken,
  type TestClient,
} from './support/auth.js';
import { bearer } from './support/identity.js';
import { runCli } from './support/processes.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { DIRECTORY } from './support/transfers.js';
import { createOwner, openAccount, type AccountInfo } from './support/wallet.js';
import { pollUntil, WebhookReceiver } from './support/webhook-receiver.js';

const AUTH_CACHE_MS = 1000;

/**
 * `apps disable` and `apps enable` (decision 0092), run as operators run them (the built CLI, another process)
 * against a running API with its worker: a disabled application's access tokens, user tokens and token requests
 * are refused within AUTH_CACHE_MS and work again after `apps enable`; its money still moves and its webhooks are
 * still delivered.
 */
describe('apps disable / apps enable (the CLI beside a running API)', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;
  let owner: string;
  let account: AccountInfo;
  let receiver: WebhookReceiver;

  /** A command that must succeed with one JSON document, and write nothing on stderr. */
  const cliJson = async (args: string[]): Promise<unknown> => {
    const result = await runCli(t, args);
    expect({ args, code: result.code, stderr: result.stderr }).toStrictEqual({ args, code: 0, stderr: '' });
    return JSON.parse(result.stdout) as unknown;
  };

  /** The three ways in: the access token, a user token of the account's owner, the token endpoint. */
  const statuses = async (): Promise<number[]> => [
    (await request(t.http).get(`/v1/wallet/accounts/${account.uuid}`).set('Authorization', bearer(token)))
      .status,
    (
      await request(t.http)
        .get(`/v1/wallet/accounts/${account.uuid}`)
        .set('Authorization', bearer(await subjectToken(client, owner)))
    ).status,
    (
      await request(t.http)
        .post('/v1/oauth/app/token')
        .send({ appId: client.appId, token: await clientAssertion(client), grantType: 'client_credentials' })
    ).status,
  ];

  /** Asks until every way in answers `expected`, each round begun within AUTH_CACHE_MS (and a margin) of `since`. */
  const allWithinCache = async (expected: number, since: number) => {
    for (;;) {
      const startedAt = Date.now();
      const seen = await statuses();
      if (seen.every((status) => status === expected)) return;
      // When this round's requests were sent, at the earliest: a round that ends late may have begun in time.
      expect(startedAt - since).toBeLessThan(AUTH_CACHE_MS + 500);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const outcomes = async (): Promise<string[][]> =>
    (
      (await t.dataSource.query(
        `SELECT app_id, principal, action, outcome FROM audit_records
          WHERE resource_type = 'application' AND resource_id = $1 AND principal_type = 'cli' ORDER BY id`,
        [client.appId],
      )) as { app_id: string; principal: string; action: string; outcome: string }[]
    ).map((row) => [row.app_id, row.principal, row.action, row.outcome]);

  beforeAll(async () => {
    t = await startTestApp({
      runWorker: true,
      env: {
        AUTH_CACHE_MS: String(AUTH_CACHE_MS),
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        WEBHOOK_SWEEP_INTERVAL_MS: '200',
      },
    });
    receiver = await WebhookReceiver.start();
    client = await registerClient(t.app, 'to be disabled');
    await t.app.get(AppsService).setWebhook(client.appId, receiver.url(), cliActor('test'));
    token = await accessToken(t.http, client);
    owner = await createOwner(t.http, token);
    account = await openAccount(t.http, token, client.appId, owner);
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it("refuses the application's access tokens, user tokens and token requests within AUTH_CACHE_MS; its webhooks are still delivered; `apps enable` lets it in again", async () => {
    expect(await statuses()).toEqual([200, 200, 200]);

    expect(await cliJson(['apps', 'disable', '--app-id', client.appId.toUpperCase()])).toStrictEqual({
      appId: client.appId,
      status: 'disabled',
    });
    await allWithinCache(401, Date.now());
    const listed = (await cliJson(['apps', 'list'])) as { appId: string; status: string }[];
    expect(listed.find((app) => app.appId === client.appId)?.status).toBe('disabled');
    // Again: nothing changes, `unchanged` is recorded.
    expect(await cliJson(['apps', 'disable', '--app-id', client.appId])).toStrictEqual({
      appId: client.appId,
      status: 'disabled',
    });
    expect(await statuses()).toEqual([401, 401, 401]);

    // Its money still moves (the rail credits its account) and its receiver is told, as before.
    const { nacion } = DIRECTORY;
    const credit = ['--cvu', account.cvu, '--amount', '12.5', '--from', nacion.number, '--cuit', nacion.cuit];
    const inbound = (await cliJson(['transfers', 'inbound', ...credit, '--name', nacion.name])) as {
      transferId: string;
    };
    const [event] = (await t.dataSource.query(
      `SELECT id::text AS id, event FROM webhook_events WHERE app_id = $1 AND subject = $2`,
      [client.appId, inbound.transferId],
    )) as { id: string; event: string }[];
    expect(event.event).toBe('transfer_update');
    await pollUntil('the disabled application to be told of the credit', async () => {
      const [row] = (await t.dataSource.query(`SELECT status FROM webhook_events WHERE id = $1`, [
        event.id,
      ])) as { status: string }[];
      return receiver.acknowledged(event.id).length === 1 && row.status === 'delivered';
    });

    expect(await cliJson(['apps', 'enable', '--app-id', client.appId])).toStrictEqual({
      appId: client.appId,
      status: 'active',
    });
    await allWithinCache(200, Date.now());
    expect(await cliJson(['apps', 'enable', '--app-id', client.appId])).toStrictEqual({
      appId: client.appId,
      status: 'active',
    });

    // Recorded as the other apps commands are: the OS user who ran them, in the application's trail.
    const user = os.userInfo().username;
    expect(await outcomes()).toStrictEqual([
      [client.appId, user, 'test', 'created'],
      [client.appId, user, 'test', 'webhook set'],
      [client.appId, user, 'apps disable', 'disabled'],
      [client.appId, user, 'apps disable', 'unchanged'],
      [client.appId, user, 'apps enable', 'enabled'],
      [client.appId, user, 'apps enable', 'unchanged'],
    ]);
  }, 60_000);
});
