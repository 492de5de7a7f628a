import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';

/** Documented test numbers of the SMS simulator (README, "SMS and SIM swap"). */
export const SMS_SIMULATOR_NUMBERS = {
  /** Accepted, then a receipt with stat UNDELIV and err 001. */
  undeliverable: '541100000001',
  /** No route: POST /mobile/sms answers 400 NO ROUTES. */
  noRoute: '541100000002',
} as const;

/** The error code the simulator reports for the undeliverable test number. */
export const SMS_SIMULATOR_UNDELIVERABLE_ERROR = '001';

/**
 * Which destinations the configured provider can reach: the prefixes of
 * SMS_ROUTE_PREFIXES (all when empty), and for the simulator every number but
 * its no-route test number. Checked by the API before a message is accepted.
 */
@Injectable()
export class SmsRouting {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  routable(dnis: string): boolean {
    const { smsProvider, smsRoutePrefixes } = this.config.mobile;
    if (smsProvider === 'simulator' && dnis === SMS_SIMULATOR_NUMBERS.noRoute) return false;
    return smsRoutePrefixes.length === 0 || smsRoutePrefixes.some((prefix) => dnis.startsWith(prefix));
  }
}
