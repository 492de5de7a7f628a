import { camaraPhoneNumber, toE164 } from './phone-number.js';

describe('toE164', () => {
  it('prefixes + to the 12 digits by default', () => {
    expect(toE164('541123456789', 'e164')).toBe('+541123456789');
    expect(toE164('441234567890', 'e164')).toBe('+441234567890');
  });

  it('inserts the Argentine mobile 9 in ar-mobile-9 form, for +54 numbers only', () => {
    expect(toE164('541123456789', 'ar-mobile-9')).toBe('+5491123456789');
    expect(toE164('441234567890', 'ar-mobile-9')).toBe('+441234567890');
  });

  it('refuses anything but 12 digits', () => {
    expect(() => toE164('54112345678', 'e164')).toThrow('exactly 12 digits');
    expect(() => toE164('+54112345678', 'e164')).toThrow('exactly 12 digits');
  });

  it("refuses a number whose E.164 form is not CAMARA's: a leading 0, in either form", () => {
    expect(camaraPhoneNumber('012345678901', 'e164')).toBeUndefined();
    expect(camaraPhoneNumber('012345678901', 'ar-mobile-9')).toBeUndefined();
    expect(() => toE164('012345678901', 'e164')).toThrow('not a number CAMARA takes');
    expect(camaraPhoneNumber('541123456789', 'e164')).toBe('+541123456789');
    expect(camaraPhoneNumber('541123456789', 'ar-mobile-9')).toBe('+5491123456789');
  });
});
