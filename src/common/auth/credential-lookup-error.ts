/**
 * A credential check that could not be completed (the database or the key store failed): the caller's
 * credentials were not refused, so the answer is a server error, not a 401 that would make a client drop a
 * valid token. Strategies wrap such failures in it; `validate` throws only for them.
 */
export class CredentialLookupError extends Error {
  constructor(readonly reason: unknown) {
    super('the credentials could not be checked');
  }
}
