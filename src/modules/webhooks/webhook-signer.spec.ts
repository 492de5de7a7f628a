import { CompactSign, compactVerify, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import type { SigningKey } from '#modules/auth/signing-keys.service.js';
import { WebhookSigner } from './webhook-signer.js';

describe('WebhookSigner', () => {
  let key: SigningKey;
  let publicKey: CryptoKey;
  const payload = {
    event: 'transfer_update',
    timestamp: 1_795_000_000,
    data: { uuid: 'a0f0c7c4-4f1c-4c55-9a55-6f8e3e1f0b6e', note: 'ñandú – ✓', amount: 12.5 },
  };

  const attempt = {
    id: '0193a0f0-c7c4-7f1c-8c55-9a556f8e3e1f',
    timestamp: 1_795_000_123,
    app: '5b0a3c1e-2f4d-4e6a-8b7c-9d0e1f2a3b4c',
  };

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    publicKey = pair.publicKey;
    key = {
      kid: 'kid-1',
      privateKey: pair.privateKey,
      publicJwk: await exportJWK(pair.publicKey),
      publicKeyObject: undefined as never,
      createdAt: new Date().toISOString(),
      signsFrom: new Date().toISOString(),
      retiredAt: null,
    };
  });

  it('writes the compact JWS jose writes (same protected header and payload bytes) and it verifies as ES256', async () => {
    const signer = new WebhookSigner();
    const jws = await signer.sign(key, payload, attempt);
    const byJose = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
      .setProtectedHeader({
        alg: 'ES256',
        kid: key.kid,
        typ: 'JWT',
        'webhook-id': attempt.id,
        'webhook-timestamp': attempt.timestamp,
        'webhook-app': attempt.app,
      })
      .sign(key.privateKey);
    const [header, body, signature] = jws.split('.');
    expect(`${header}.${body}`).toBe(byJose.split('.').slice(0, 2).join('.'));
    expect(Buffer.from(signature, 'base64url')).toHaveLength(64); // r‖s, not DER

    const verified = await compactVerify(jws, publicKey, { algorithms: ['ES256'] });
    // The attempt's Webhook-Id and Webhook-Timestamp, and the application it is for, are signed with the body.
    expect(verified.protectedHeader).toEqual({
      alg: 'ES256',
      kid: 'kid-1',
      typ: 'JWT',
      'webhook-id': attempt.id,
      'webhook-timestamp': attempt.timestamp,
      'webhook-app': attempt.app,
    });
    expect(JSON.parse(new TextDecoder().decode(verified.payload))).toEqual(payload);
    // jose's own signature verifies the same way (same format).
    await expect(compactVerify(byJose, publicKey, { algorithms: ['ES256'] })).resolves.toBeDefined();
    await signer.close();
  });

  it('names the receiving application in the header: the same event for two applications, two signed headers', async () => {
    const signer = new WebhookSigner();
    const other = { ...attempt, app: '0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5' };
    const [forA, forB] = await Promise.all([
      signer.sign(key, payload, attempt),
      signer.sign(key, payload, other),
    ]);
    const headers = await Promise.all(
      [forA, forB].map(
        async (jws) => (await compactVerify(jws, publicKey, { algorithms: ['ES256'] })).protectedHeader,
      ),
    );
    expect(headers.map((header) => header['webhook-app'])).toEqual([attempt.app, other.app]);
    // Appended: the members before it keep their place (and the header's other bytes theirs).
    expect(Object.keys(headers[1])).toEqual([
      'alg',
      'kid',
      'typ',
      'webhook-id',
      'webhook-timestamp',
      'webhook-app',
    ]);
    // Same payload, id and time: only the application differs, and the signature covers it.
    expect(forA.split('.')[1]).toBe(forB.split('.')[1]);
    expect(forA.split('.')[0]).not.toBe(forB.split('.')[0]);
    const swapped = `${forB.split('.')[0]}.${forA.split('.')[1]}.${forA.split('.')[2]}`;
    await expect(compactVerify(swapped, publicKey, { algorithms: ['ES256'] })).rejects.toThrow(
      'signature verification failed',
    );
    await signer.close();
  });

  it('signs again with the cached key, and with a new key (rotation) under its kid', async () => {
    const signer = new WebhookSigner();
    const first = await signer.sign(key, payload, attempt);
    const second = await signer.sign(key, { ...payload, timestamp: 1 }, attempt);
    await expect(compactVerify(second, publicKey, { algorithms: ['ES256'] })).resolves.toBeDefined();
    expect(first.split('.')[0]).toBe(second.split('.')[0]);
    // Another attempt, another header: its id and timestamp are what the signature covers.
    const later = await signer.sign(key, payload, { ...attempt, timestamp: attempt.timestamp + 5 });
    expect(later.split('.')[0]).not.toBe(first.split('.')[0]);
    expect((await compactVerify(later, publicKey, { algorithms: ['ES256'] })).protectedHeader).toMatchObject({
      'webhook-timestamp': attempt.timestamp + 5,
    });

    const rotated = await generateKeyPair('ES256');
    const jws = await signer.sign({ ...key, kid: 'kid-2', privateKey: rotated.privateKey }, payload, attempt);
    const verified = await compactVerify(jws, rotated.publicKey, { algorithms: ['ES256'] });
    expect(verified.protectedHeader.kid).toBe('kid-2');
    await expect(compactVerify(jws, publicKey, { algorithms: ['ES256'] })).rejects.toThrow();
    await signer.close();
  });

  it('answers each signature to its own caller when many wait at once', async () => {
    const signer = new WebhookSigner();
    const payloads = Array.from({ length: 300 }, (_, i) => ({ ...payload, timestamp: i }));
    const signed = await Promise.all(payloads.map((one) => signer.sign(key, one, attempt)));
    for (const [i, jws] of signed.entries()) {
      const verified = await compactVerify(jws, publicKey, { algorithms: ['ES256'] });
      expect(JSON.parse(new TextDecoder().decode(verified.payload))).toEqual(payloads[i]);
    }
    await signer.close();
  });

  it("signs one input alone on the caller's thread, and sends one to the thread while others wait there", async () => {
    const signer = new WebhookSigner();
    const threadOf = () => (signer as unknown as { thread?: unknown }).thread;
    const waitingForThread = () => (signer as unknown as { waiting: Map<number, unknown> }).waiting.size;
    const alone = await signer.sign(key, payload, attempt);
    await expect(compactVerify(alone, publicKey, { algorithms: ['ES256'] })).resolves.toBeDefined();
    expect(threadOf()).toBeUndefined(); // an idle worker's delivery: no hop to a thread and back

    // Two in one turn go to the thread; one asked for in the next turn, while they wait, follows them there.
    const pair = [
      signer.sign(key, payload, attempt),
      signer.sign(key, { ...payload, timestamp: 2 }, attempt),
    ];
    await Promise.resolve();
    const next = signer.sign(key, { ...payload, timestamp: 3 }, attempt);
    await Promise.resolve(); // its turn's end: sent, not signed here
    expect(threadOf()).toBeDefined();
    expect(waitingForThread()).toBe(3);
    for (const jws of await Promise.all([...pair, next]))
      await expect(compactVerify(jws, publicKey, { algorithms: ['ES256'] })).resolves.toBeDefined();
    await signer.close();
  });

  it('fails what waits when the signing thread ends, and signs again on a new thread (with every key)', async () => {
    const signer = new WebhookSigner();
    await Promise.all([signer.sign(key, payload, attempt), signer.sign(key, payload, attempt)]); // the thread holds the key
    const waiting = Array.from({ length: 2000 }, (_, i) =>
      signer.sign(key, { ...payload, timestamp: i }, attempt),
    );
    await signer.close();
    const outcomes = await Promise.allSettled(waiting);
    const failed = outcomes.filter((one) => one.status === 'rejected');
    expect(failed.length).toBeGreaterThan(0);
    for (const one of failed) expect(String(one.reason)).toMatch(/the webhook signing thread exited/);
    for (const one of outcomes)
      if (one.status === 'fulfilled')
        await expect(compactVerify(one.value, publicKey, { algorithms: ['ES256'] })).resolves.toBeDefined();

    // Two at once: a batch for the new thread, which is sent the key again.
    const again = await Promise.all([signer.sign(key, payload, attempt), signer.sign(key, payload, attempt)]);
    for (const jws of again)
      await expect(compactVerify(jws, publicKey, { algorithms: ['ES256'] })).resolves.toBeDefined();
    await signer.close();
  });
});
