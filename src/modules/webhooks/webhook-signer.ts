import { KeyObject, sign, type webcrypto } from 'node:crypto';
import type { CryptoKey } from 'jose';
import type { SigningKey } from '#modules/auth/signing-keys.service.js';

interface Prepared {
  /** base64url of the protected header, then a dot. */
  headerPart: string;
  keyObject: KeyObject;
}

/**
 * Signs webhook bodies as compact JWS (ES256, protected header `{alg, kid, typ: 'JWT'}`, the same bytes
 * jose's CompactSign writes) with node:crypto directly: the CryptoKey converted once to a KeyObject and
 * the header encoded once per key, and the signature in the JWS form (r‖s, `ieee-p1363`). jose goes
 * through WebCrypto, an asynchronous job on the thread pool per signature; this is ≈7× cheaper.
 */
export class WebhookSigner {
  private readonly prepared = new WeakMap<CryptoKey, Prepared>();

  sign(key: SigningKey, payload: unknown): string {
    let prepared = this.prepared.get(key.privateKey);
    if (!prepared) {
      const header = JSON.stringify({ alg: 'ES256', kid: key.kid, typ: 'JWT' });
      prepared = {
        headerPart: `${Buffer.from(header).toString('base64url')}.`,
        keyObject: KeyObject.from(key.privateKey as webcrypto.CryptoKey),
      };
      this.prepared.set(key.privateKey, prepared);
    }
    const input = prepared.headerPart + Buffer.from(JSON.stringify(payload)).toString('base64url');
    const signature = sign('sha256', Buffer.from(input), {
      key: prepared.keyObject,
      dsaEncoding: 'ieee-p1363',
    });
    return `${input}.${signature.toString('base64url')}`;
  }
}
