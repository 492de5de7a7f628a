import { ValidationFailedError } from '../errors/domain-errors.js';
import { parseForm } from './form-body.js';

const FORM = 'application/x-www-form-urlencoded';
const parse = (text: string, type = FORM) => parseForm(Buffer.from(text), type);
const refusal = (text: string, type = FORM) => {
  try {
    parse(text, type);
  } catch (error) {
    return error instanceof ValidationFailedError ? error.items : error;
  }
  return 'accepted';
};

describe('parseForm', () => {
  it('decodes percent-encoding and +, as UTF-8', () => {
    expect({ ...parse('a=x%2By+z&b=%C3%A9%F0%9F%94%91') }).toStrictEqual({ a: 'x+y z', b: 'é🔑' });
  });

  it('treats a parameter without a value as absent (RFC 6749 §3.1)', () => {
    expect({ ...parse('a=&b&c=1') }).toStrictEqual({ c: '1' });
  });

  it('refuses a parameter sent twice, even empty (RFC 6749 §3.2)', () => {
    expect(refusal('a=1&a=2')).toStrictEqual([{ path: 'a', message: 'a is repeated', type: 'duplicate' }]);
    expect(refusal('a=&a=2')).toStrictEqual([{ path: 'a', message: 'a is repeated', type: 'duplicate' }]);
  });

  it('keeps prototype names as plain data', () => {
    const form = parse('__proto__=1&constructor=2');
    expect(Object.getPrototypeOf(form)).toBeNull();
    expect(Object.entries(form)).toStrictEqual([
      ['__proto__', '1'],
      ['constructor', '2'],
    ]);
    expect(({} as Record<string, unknown>).constructor).toBe(Object);
  });

  it('refuses NUL characters in names and values', () => {
    const nul = [{ path: '', message: 'form parameters must not contain NUL characters', type: 'invalid' }];
    expect(refusal('a=%00')).toStrictEqual(nul);
    expect(refusal('%00=1')).toStrictEqual(nul);
  });

  it('takes UTF-8 (any case, quoted or not) and no charset, refuses any other charset', () => {
    for (const type of [FORM, `${FORM}; charset=UTF-8`, `${FORM};charset="utf-8"`]) {
      expect({ type, form: { ...parse('a=1', type) } }).toStrictEqual({ type, form: { a: '1' } });
    }
    expect(refusal('a=1', `${FORM}; charset=iso-8859-1`)).toStrictEqual([
      { path: '', message: 'a form body must be UTF-8', type: 'invalid' },
    ]);
  });
});
