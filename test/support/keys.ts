import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';

export type KeyKind = 'P-256' | 'P-384' | 'rsa-2048' | 'ed25519';

export interface FreshKeyPair {
  publicKey: KeyObject;
  privateKey: KeyObject;
  /** SPKI PEM. */
  publicPem: string;
  /** PKCS#8 PEM. */
  privatePem: string;
}

function generatePem(kind: KeyKind): { publicKey: string; privateKey: string } {
  const publicKeyEncoding = { type: 'spki', format: 'pem' } as const;
  const privateKeyEncoding = { type: 'pkcs8', format: 'pem' } as const;
  if (kind === 'rsa-2048')
    return generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding, privateKeyEncoding });
  if (kind === 'ed25519') return generateKeyPairSync('ed25519', { publicKeyEncoding, privateKeyEncoding });
  return generateKeyPairSync('ec', { namedCurve: kind, publicKeyEncoding, privateKeyEncoding });
}

/**
 * A new key pair, generated as PEM text and read back into KeyObjects. Node 20 can deadlock exporting a
 * KeyObject that generateKeyPairSync returned: the export holds the key's lock while it builds JavaScript
 * values, a garbage collection there finalizes the finished generation job, and the job's destructor takes the
 * same lock (seen in CI: `ExportJWKEdKey` → GC → `~KeyGenJob` → `uv_mutex_lock`, the Jest worker stuck for
 * good). Keys read from text share nothing with a job.
 */
export function freshKeyPair(kind: KeyKind = 'P-256'): FreshKeyPair {
  const { publicKey, privateKey } = generatePem(kind);
  return {
    publicKey: createPublicKey(publicKey),
    privateKey: createPrivateKey(privateKey),
    publicPem: publicKey,
    privatePem: privateKey,
  };
}
