/** The SIM swap provider port: the simulator (default) or a CAMARA SIM Swap endpoint (SIM_SWAP_PROVIDER). */
export const SIM_SWAP_PROVIDER = Symbol('SIM_SWAP_PROVIDER');

export interface SimSwapProvider {
  /**
   * Whether the SIM of `phoneNumber` (12 digits) changed within the last
   * `maxAgeHours`. Throws SimSwapLookupError when the provider cannot say.
   */
  swappedWithin(phoneNumber: string, maxAgeHours: number): Promise<boolean>;
}

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
    readonly providerStatus?: number,
    /** The provider's own Retry-After on a 429 or 503, in whole seconds from its answer, as it sent it. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'SimSwapLookupError';
  }
}
