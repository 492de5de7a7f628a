/** The SIM swap provider port: the simulator (default) or a CAMARA SIM Swap endpoint (SIM_SWAP_PROVIDER). */
export const SIM_SWAP_PROVIDER = Symbol('SIM_SWAP_PROVIDER');

export interface SimSwapProvider {
  /**
   * Whether the SIM of `phoneNumber` (12 digits, a number CAMARA takes: not 0 first) changed within the last
   * `maxAgeHours`. Throws SimSwapLookupError when the provider cannot say.
   */
  swappedWithin(phoneNumber: string, maxAgeHours: number): Promise<boolean>;
}

/**
 * Whether the provider may have made (and billed) the check that failed (decision 0080):
 * - `no`: certainly not. The request never reached it (connection refused, name not resolved, network
 *   unreachable), or it answered that it refused the request before any check (429, 503, or a 4xx about our
 *   request or token rather than the number);
 * - `maybe`: it may have. The request was sent and no clear refusal came back: a timeout, a connection reset
 *   or closed once the request was out, a 500/502/504 or other 5xx, a redirect, an answer we could not read, or
 *   an answer about the number itself.
 */
export type ProviderPerformed = 'no' | 'maybe';

/**
 * - `unsupported-number`: the provider cannot answer for this number (not its subscriber,
 *   not a number it knows); the caller gets 400 NO ROUTES, as for an SMS without a route;
 * - `unavailable`: the provider failed (5xx, timeout, our credentials refused, malformed answer);
 *   the caller gets 503.
 */
export class SimSwapLookupError extends Error {
  constructor(
    readonly kind: 'unsupported-number' | 'unavailable',
    message: string,
    /** Whether the provider may have made the check; SimSwapLimits gives its units back only for `no`. */
    readonly performed: ProviderPerformed,
    readonly providerStatus?: number,
    /** The provider's own Retry-After on a 429 or 503, in whole seconds from its answer, as it sent it. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'SimSwapLookupError';
  }
}
