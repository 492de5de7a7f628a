/**
 * The interface's phone numbers are 12 digits: 54 + the 10-digit national
 * number, without the `9` Argentine mobiles carry in international form
 * (DOMAIN.md C6). CAMARA wants E.164 with a leading `+`.
 * - `e164` (default): `+` and the 12 digits as given (+54 11 2345 6789);
 * - `ar-mobile-9`: a number starting with 54 gets the mobile 9 (+54 9 11 2345 6789),
 *   for an operator endpoint that expects the mobile form.
 */
export type PhoneFormat = 'e164' | 'ar-mobile-9';

export function toE164(digits: string, format: PhoneFormat): string {
  if (!/^[0-9]{12}$/.test(digits)) throw new Error('a phone number here is exactly 12 digits');
  if (format === 'ar-mobile-9' && digits.startsWith('54')) return `+549${digits.slice(2)}`;
  return `+${digits}`;
}
