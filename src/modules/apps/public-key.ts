import { createPublicKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { ValidationFailedError } from '#common/errors/domain-errors.js';

/** An RFC 7638 SHA-256 thumbprint in base64url without padding: the only form a keyId takes. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface ParsedPublicKey {
  /** The public members only: kty, crv, x, y. */
  jwk: JWK;
  /** RFC 7638 thumbprint (SHA-256, base64url): the keyId. */
  keyId: string;
}

/**
 * Parses an EC P-256 public key given as PEM (SPKI) or as a JWK (JSON text).
 * Refuses private keys, other curves and other key types.
 */
export async function parsePublicKey(text: string, path = 'publicKey'): Promise<ParsedPublicKey> {
  const invalid = (message: string) => ValidationFailedError.single(path, 'invalid', message);
  const trimmed = text.trim();
  let key: KeyObject;
  try {
    if (trimmed.startsWith('{')) {
      const jwk = JSON.parse(trimmed) as JWK;
      if (jwk.d !== undefined) throw invalid('a private key was given: register the public key only');
      key = createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
    } else {
      if (/PRIVATE KEY/.test(trimmed)) throw invalid('a private key was given: register the public key only');
      key = createPublicKey({ key: trimmed, format: 'pem' });
    }
  } catch (error) {
    if (error instanceof ValidationFailedError) throw error;
    throw invalid('not a PEM (SPKI) or JWK public key');
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw invalid('the key must be an EC P-256 key (ES256)');
  }
  const exported = key.export({ format: 'jwk' });
  const jwk: JWK = { kty: 'EC', crv: 'P-256', x: exported.x, y: exported.y };
  return { jwk, keyId: await calculateJwkThumbprint(jwk, 'sha256') };
}

export function keyObjectFromJwk(jwk: JWK): KeyObject {
  return createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
}
