// Talking to the service under test: client application keys, access tokens, funded accounts, request bodies.
import { createPrivateKey, generateKeyPairSync, randomInt } from 'node:crypto';
import { SignJWT } from 'jose';

/**
 * Generated as PEM and read back: node 20 can deadlock exporting a key that generateKeyPairSync returned while
 * the collector finalizes its job (test/support/keys.ts).
 */
export function newKeyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKey: createPrivateKey(privateKey), publicPem: publicKey };
}

/** A client-credentials access token (POST /v1/oauth/app/token with an ES256 assertion). */
export async function accessToken(baseUrl, client) {
  const iat = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: client.keyId })
    .setIssuer(client.appId)
    .setSubject(client.appId)
    .setAudience(`${baseUrl}oauth/token`)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 3600)
    .sign(client.key.privateKey);
  const response = await fetch(`${baseUrl}oauth/app/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ appId: client.appId, token: assertion, grantType: 'client_credentials' }),
  });
  const body = await response.json();
  if (response.status !== 200)
    throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
  return { token: body.accessToken, expiresAt: Date.now() + body.expiresIn * 1000 };
}

const CUIT_WEIGHTS = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2];
let documentCounter = randomInt(10_000_000, 80_000_000);

/** A fresh valid CUIL (AFIP mod 11 check digit). */
export function newCuil(prefix = '20') {
  for (;;) {
    const first10 = `${prefix}${String(documentCounter++).padStart(8, '0')}`;
    const sum = CUIT_WEIGHTS.reduce((acc, weight, i) => acc + weight * Number(first10[i]), 0);
    const check = 11 - (sum % 11);
    if (check === 10) continue;
    return `${first10}${check === 11 ? 0 : check}`;
  }
}

function userBody(taxId) {
  return {
    firstName: 'Bench',
    lastName: 'Account',
    birthdate: '1990-04-21',
    sex: 'female',
    civilStatus: 'single',
    nationality: 'AR',
    legalInformation: {
      taxIdType: 'cuil',
      taxId,
      taxCondition: 'others',
      category: 'consumidorFinal',
      taxExempt: false,
    },
    legalAddress: {
      streetName: 'Avenida Corrientes',
      streetNumber: '1234',
      floor: '5',
      apartment: 'B',
      zipCode: 'C1043AAZ',
      neighborhood: 'San Nicolás',
      city: 'Buenos Aires',
      region: 'CABA',
      country: 'AR',
    },
  };
}

async function call(baseUrl, token, method, path, body, expected) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!expected.includes(response.status)) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` at once. */
export async function pool(count, concurrency, task) {
  const results = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

export const LIMIT = 1e11;

/**
 * Opens `count` funded accounts through the API, each with its own user: POST /v1/users, POST
 * /v1/wallet/accounts (no fee, limits far above anything a run can move), POST …/balance.
 */
export async function createFundedAccounts(baseUrl, token, appId, count, balanceOf, concurrency = 16) {
  return pool(count, concurrency, async (i) => {
    const cuil = newCuil();
    const user = await call(baseUrl, token, 'POST', 'users', userBody(cuil), [201]);
    const account = await call(
      baseUrl,
      token,
      'POST',
      'wallet/accounts',
      {
        ownerType: 'USER',
        uuid: user.uuid,
        appId,
        fees: 0,
        monthlyWithdrawLimit: LIMIT,
        monthlyDepositLimit: LIMIT,
        annualWithdrawLimit: LIMIT,
        annualDepositLimit: LIMIT,
      },
      [201],
    );
    await call(
      baseUrl,
      token,
      'POST',
      `wallet/accounts/${account.uuid}/balance`,
      { balance: balanceOf(i) },
      [200],
    );
    return { uuid: account.uuid, cvu: account.cvu, cuil };
  });
}

/** An internal transfer body (CreateTransactionRequest): `from` pays `amount` to `to`'s CVU. */
export function transferBody(from, to, amount) {
  return JSON.stringify({
    accountUUID: from.uuid,
    movementType: 'WITHDRAW',
    counterParty: {
      name: 'Bench Account',
      cValue: to.cuil,
      identifierType: 'CVU',
      identifier: to.cvu,
      branchName: 'Casa central',
    },
    amount,
    concept: 'VAR',
  });
}
