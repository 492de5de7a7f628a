/**
 * The interface's phone numbers are 12 digits: 54 + the 10-digit national
 * number, without the `9` Argentine mobiles carry in international form
 * (DOMAIN.md C6). CAMARA wants E.164 with a leading `+`.
 * - `e164` (default): `+` and the 12 digits as given (+54 11 2345 6789);
 * - `ar-mobile-9`: a number starting with 54 gets the mobile 9 (+54 9 11 2345 6789),
 *   for an operator endpoint that expects the mobile form.
 */
export type PhoneFormat = 'e164' | 'ar-mobile-9';

/** CAMARA's `phoneNumber` (DOMAIN.md C5): E.164 with a leading `+`; no country code starts with 0. */
export const CAMARA_PHONE_NUMBER = /^\+[1-9][0-9]{4,14}$/;

/**
 * The 12 digits in the form CAMARA is sent, or undefined when that form is not CAMARA's (a leading 0): the
 * operator would refuse it (400 INVALID_ARGUMENT), so it is never sent (decision 0086).
 */
export function camaraPhoneNumber(digits: string, format: PhoneFormat): string | undefined {
  if (!/^[0-9]{12}$/.test(digits)) throw new Error('a phone number here is exactly 12 digits');
  const e164 = format === 'ar-mobile-9' && digits.startsWith('54') ? `+549${digits.slice(2)}` : `+${digits}`;
  return CAMARA_PHONE_NUMBER.test(e164) ? e164 : undefined;
}

/** The number CAMARA is sent; throws for one that is not CAMARA's (SimSwapService refuses those first). */
export function toE164(digits: string, format: PhoneFormat): string {
  const e164 = camaraPhoneNumber(digits, format);
  if (e164 === undefined) throw new Error('not a number CAMARA takes (E.164 with a leading +, not +0)');
  return e164;
}
