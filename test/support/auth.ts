import { randomUUID, sign, type KeyObject } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { SignJWT, type JWTPayload } from 'jose';
import request from 'supertest';
import type { Server } from 'node:http';
import { AppsService } from '../../src/modules/apps/apps.service.js';
import { cliActor } from '../../src/modules/audit/audit-trail.js';
import { TEST_BASE_URL } from './test-app.js';
import { freshKeyPair } from './keys.js';

export interface KeyPair {
  privateKey: KeyObject;
  publicPem: string;
}

export function newKeyPair(): KeyPair {
  const { privateKey, publicPem } = freshKeyPair();
  return { privateKey, publicPem };
}

export interface TestClient {
  appId: string;
  keyId: string;
  key: KeyPair;
}

/** Registers an application through the same service the CLI uses. */
export async function registerClient(app: INestApplication, name = 'test-app'): Promise<TestClient> {
  const key = newKeyPair();
  const created = await app.get(AppsService).create({ name, publicKey: key.publicPem }, cliActor('test'));
  return { appId: created.appId, keyId: created.keyId, key };
}

export interface AssertionOptions {
  header?: Record<string, unknown>;
  claims?: JWTPayload;
  lifetimeSeconds?: number;
  iat?: number;
  privateKey?: KeyObject;
  omit?: string[];
}

/** A client assertion as the interface describes it (RFC 7523), with knobs to break it. */
export async function clientAssertion(client: TestClient, options: AssertionOptions = {}): Promise<string> {
  const iat = options.iat ?? Math.floor(Date.now() / 1000);
  const payload: JWTPayload = {
    iss: client.appId,
    sub: client.appId,
    aud: `${TEST_BASE_URL}oauth/token`,
    iat,
    exp: iat + (options.lifetimeSeconds ?? 3600),
    ...options.claims,
  };
  for (const claim of options.omit ?? []) delete payload[claim];
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', kid: client.keyId, ...options.header } as { alg: string })
    .sign(options.privateKey ?? client.key.privateKey);
}

/** A user token ("BearerAuth") signed by the application for one of its users or companies. */
export async function subjectToken(
  client: TestClient,
  subject: string,
  options: AssertionOptions = {},
): Promise<string> {
  const iat = options.iat ?? Math.floor(Date.now() / 1000);
  const payload: JWTPayload = {
    iss: client.appId,
    sub: subject,
    aud: TEST_BASE_URL,
    iat,
    exp: iat + (options.lifetimeSeconds ?? 600),
    ...options.claims,
  };
  for (const claim of options.omit ?? []) delete payload[claim];
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', kid: client.keyId, ...options.header } as { alg: string })
    .sign(options.privateKey ?? client.key.privateKey);
}

/** An access token obtained through POST /v1/oauth/app/token (of an in-process server, or at an origin URL). */
export async function accessToken(http: Server | string, client: TestClient): Promise<string> {
  const response = await request(http)
    .post('/v1/oauth/app/token')
    .send({ appId: client.appId, token: await clientAssertion(client), grantType: 'client_credentials' });
  if (response.status !== 200)
    throw new Error(`token request failed: ${response.status} ${JSON.stringify(response.body)}`);
  return (response.body as { accessToken: string }).accessToken;
}

export const randomSubject = () => randomUUID();

/** Encodes a JWT with the given header and payload and an arbitrary signature part. */
export function unsignedJwt(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  signature = '',
): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part(header)}.${part(payload)}.${signature}`;
}

/**
 * An ES256 JWS signed with node:crypto from the given header and claims as they are: jose refuses to sign what a
 * verifier must refuse (a crit naming an extension it does not know).
 */
export function handSignedJwt(
  privateKey: KeyObject,
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part({ alg: 'ES256', ...header })}.${part(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}
