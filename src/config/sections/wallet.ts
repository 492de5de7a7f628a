import type { EnvReaders } from '../env-readers.js';

/** Wallet accounts: their currency, the CVUs issued, and the calendar of operated amounts. */
export interface WalletConfig {
  /** Currency of new wallet accounts (ISO 4217). */
  readonly accountCurrency: string;
  /** The PSP code in issued CVUs (4 digits): CVU = 000 + PSP + check, 0 + 12-digit client number + check. */
  readonly cvuPspCode: string;
  /** Calendar of the operated amounts (month and year to date). */
  readonly operationsTimeZone: string;
}

const CURRENCIES = [
  'ARS',
  'USD',
  'EUR',
  'BRL',
  'UYU',
  'CLP',
  'PYG',
  'BOB',
  'PEN',
  'MXN',
  'COP',
  'GBP',
  'JPY',
];

export function loadWalletConfig({ str, problems }: EnvReaders): WalletConfig {
  const accountCurrency = str('ACCOUNT_CURRENCY') ?? 'ARS';
  if (!CURRENCIES.includes(accountCurrency)) {
    problems.push(
      `ACCOUNT_CURRENCY must be a supported ISO 4217 code such as ARS (got "${accountCurrency}")`,
    );
  }
  const cvuPspCode = str('CVU_PSP_CODE') ?? '0031';
  if (!/^\d{4}$/.test(cvuPspCode)) problems.push(`CVU_PSP_CODE must be 4 digits (got "${cvuPspCode}")`);
  const operationsTimeZone = str('OPERATIONS_TIME_ZONE') ?? 'America/Argentina/Buenos_Aires';
  try {
    new Intl.DateTimeFormat('en', { timeZone: operationsTimeZone });
  } catch {
    problems.push(`OPERATIONS_TIME_ZONE must be an IANA time zone (got "${operationsTimeZone}")`);
  }
  return { accountCurrency, cvuPspCode, operationsTimeZone };
}
