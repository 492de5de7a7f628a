import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { PinoLogger } from '#common/logging/pino-logger.js';
import { readCappedText } from '#common/net/answer-cap.js';
import { parseRetryAfter } from '#common/net/retry-after.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { toE164 } from './phone-number.js';
import { SimSwapLookupError, type ProviderPerformed, type SimSwapProvider } from './sim-swap.port.js';

/** CAMARA error codes that mean "this number cannot be checked here", not "the provider failed". */
const UNSUPPORTED_NUMBER_CODES = new Set([
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'IDENTIFIER_NOT_FOUND',
  'SERVICE_NOT_APPLICABLE',
  'UNSUPPORTED_IDENTIFIER',
]);

/**
 * The codes of a connection that never carried the request (decision 0080): refused, the name not resolved, no
 * route to the host, or undici's own connect timeout. Any other failure of fetch may come after the request was
 * sent (a reset, a closed socket, our timeout), so the provider may have made the check.
 */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * GSMA Open Gateway / CAMARA SIM Swap (`POST {base}/check`, DOMAIN.md C5) with
 * a two-legged bearer token: `{phoneNumber: '+E.164', maxAge: hours}` →
 * `{swapped: boolean}`. Answers are mapped (docs/decisions/0010-messaging.md):
 * - 200 with a boolean `swapped`: the answer;
 * - 400 INVALID_ARGUMENT, 404, 422 SERVICE_NOT_APPLICABLE / IDENTIFIER_NOT_FOUND /
 *   UNSUPPORTED_IDENTIFIER: the number cannot be checked → `unsupported-number`;
 * - anything else (other 4xx such as 400 OUT_OF_RANGE, 401, 403, 429; 5xx; a
 *   malformed 200; timeout; connection error) → `unavailable`, with the provider's Retry-After of a 429 or 503.
 * Each failure says whether the provider may have made the check (`performed`, decision 0080): `no` for a
 * connection that never carried the request and for an answer that refused it before any check (those other
 * 4xx, and 503); `maybe` for everything else, the number's own answers included.
 */
@Injectable()
export class CamaraSimSwapClient implements SimSwapProvider {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly logger: PinoLogger,
  ) {
    this.logger.setContext('CamaraSimSwap');
  }

  async swappedWithin(phoneNumber: string, maxAgeHours: number): Promise<boolean> {
    const { baseUrl, accessToken, timeoutMs, phoneFormat } = this.config.mobile.camara;
    // Outside the try: a number that is not CAMARA's is a caller's error (SimSwapService refuses it), not a failure.
    const e164 = toE164(phoneNumber, phoneFormat);
    const correlator = randomUUID();
    const started = performance.now();
    let response: Response;
    try {
      response = await fetch(`${baseUrl}/check`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${accessToken}`,
          'Content-Type': 'application/json',
          Accept: 'application/json',
          'x-correlator': correlator,
        },
        body: JSON.stringify({ phoneNumber: e164, maxAge: maxAgeHours }),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError';
      // The error's name and its cause's code only: fetch's messages quote what they refuse (a header with the
      // access token, a URL), and the logs must not carry either.
      const cause = (error as { cause?: { code?: unknown } }).cause;
      const code = typeof cause?.code === 'string' ? cause.code : undefined;
      const performed: ProviderPerformed = code !== undefined && NOT_SENT_CODES.has(code) ? 'no' : 'maybe';
      this.logger.warn(
        { correlator, timedOut, error: (error as Error).name, code, performed },
        'CAMARA SIM swap unreachable',
      );
      throw new SimSwapLookupError(
        'unavailable',
        timedOut ? 'SIM swap provider timed out' : 'SIM swap provider unreachable',
        performed,
      );
    }
    const ms = Math.round(performance.now() - started);
    const body = await readJson(response);
    if (response.status === 200 && body && typeof body.swapped === 'boolean') {
      this.logger.debug({ correlator, ms }, 'CAMARA SIM swap answered');
      return body.swapped;
    }
    const code = typeof body?.code === 'string' ? body.code : undefined;
    // Status and CAMARA code only: the number never reaches the logs.
    this.logger.warn({ correlator, status: response.status, code, ms }, 'CAMARA SIM swap refused the check');
    // A 404 is the number's, whatever its code (decision 0010: releases name it NOT_FOUND,
    // IDENTIFIER_NOT_FOUND, SIM_SWAP.UNKNOWN_PHONE_NUMBER, …); a 400 or 422 only with a code that says so.
    const unsupported =
      response.status === 404 ||
      ((response.status === 400 || response.status === 422) &&
        code !== undefined &&
        UNSUPPORTED_NUMBER_CODES.has(code));
    const retryAfterMs =
      response.status === 429 || response.status === 503
        ? parseRetryAfter(response.headers.get('retry-after') ?? undefined)
        : undefined;
    throw new SimSwapLookupError(
      unsupported ? 'unsupported-number' : 'unavailable',
      `SIM swap provider answered ${response.status}${code ? ` ${code}` : ''}`,
      refusedBeforeCheck(response.status, unsupported, {
        camaraCode: code !== undefined,
        retryAfter: response.headers.has('retry-after'),
      })
        ? 'no'
        : 'maybe',
      response.status,
      retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
    );
  }
}

/**
 * Whether an answer that is not a result says the provider made no check (decision 0080): the provider's own 503
 * (it does not take requests now) or a 4xx about our request rather than the number (401 and 403 our token, 429
 * our rate, 400 OUT_OF_RANGE our maxAge, 422 UNNECESSARY_IDENTIFIER or MISSING_IDENTIFIER our token's kind). An
 * answer about the number (`unsupported`) came from looking it up: the provider served the request. A 500, 502,
 * 504 or other 5xx may come after the check was made (a failure while answering, a gateway whose upstream had
 * the request), and so may a 200 we could not read. A 503 counts as the provider's own only with a CAMARA error
 * body or a Retry-After: a bare 503 is what a gateway in front of it (Envoy, Istio) answers when its upstream
 * reset or closed the connection, maybe after it had the request (found in review).
 */
function refusedBeforeCheck(
  status: number,
  unsupported: boolean,
  answer: { camaraCode: boolean; retryAfter: boolean },
): boolean {
  if (unsupported) return false;
  if (status === 503) return answer.camaraCode || answer.retryAfter;
  return status >= 400 && status < 500;
}

/** The most of a provider's answer that is read: a CAMARA answer is a few hundred bytes. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * The answer's JSON object, read as a stream: an answer larger than MAX_ANSWER_BYTES is not read on (nor held in
 * memory) and counts as malformed.
 */
async function readJson(response: Response): Promise<Record<string, unknown> | undefined> {
  try {
    const text = await readCappedText(response.body, MAX_ANSWER_BYTES);
    if (text === undefined) return undefined;
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
