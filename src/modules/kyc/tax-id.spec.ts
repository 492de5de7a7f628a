import {
  cnpjProblem,
  cuitCheckDigit,
  cuitProblem,
  ENTITY_PREFIXES,
  normalizeCnpj,
  normalizeTaxId,
  PERSON_PREFIXES,
  personTypeOf,
} from './tax-id.js';

/**
 * Reference implementations written from the published algorithms, independent
 * of the code under test: AFIP's mod 11 over the weights 5,4,3,2,7,6,5,4,3,2
 * (11 → 0, 10 → no valid number), and the Receita Federal's two mod 11 CNPJ
 * check digits (remainder < 2 → 0, else 11 − remainder).
 */
function referenceCuitDigit(first10: string): number | undefined {
  const weights = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2];
  let sum = 0;
  for (let i = 0; i < 10; i++) sum += Number(first10[i]) * weights[i];
  const check = 11 - (sum % 11);
  return check === 11 ? 0 : check === 10 ? undefined : check;
}

function referenceCnpjDigits(first12: string): string {
  const digit = (base: string) => {
    // Weights 2..9 repeating from the right.
    let sum = 0;
    for (let i = 0; i < base.length; i++) sum += (base.charCodeAt(base.length - 1 - i) - 48) * ((i % 8) + 2);
    const rest = sum % 11;
    return rest < 2 ? 0 : 11 - rest;
  };
  const first = digit(first12);
  return `${first}${digit(`${first12}${first}`)}`;
}

/** A deterministic stream of 8-digit document numbers (no Math.random: failures must reproduce). */
function* documentNumbers(count: number): Generator<string> {
  let value = 12_345_678;
  for (let i = 0; i < count; i++) {
    value = (value * 7_919 + 104_729) % 100_000_000;
    yield String(value).padStart(8, '0');
  }
}

/** Valid CUITs for a prefix, computed with the reference algorithm. */
function validCuits(prefix: string, count: number): string[] {
  const out: string[] = [];
  for (const document of documentNumbers(count * 2 + 20)) {
    const digit = referenceCuitDigit(`${prefix}${document}`);
    if (digit !== undefined) out.push(`${prefix}${document}${digit}`);
    if (out.length === count) break;
  }
  return out;
}

/** A first-10 whose remainder leaves check 10: no digit makes it valid. */
function withoutCheckDigit(prefix: string): string {
  for (const document of documentNumbers(500)) {
    if (referenceCuitDigit(`${prefix}${document}`) === undefined) return `${prefix}${document}`;
  }
  throw new Error('no example found');
}

const withWrongDigit = (cuit: string) => `${cuit.slice(0, 10)}${(Number(cuit[10]) + 1) % 10}`;

describe('tax ids', () => {
  describe('reference implementation sanity (well-known public numbers)', () => {
    it('agrees with published CUITs and CNPJs', () => {
      // AFIP's own CUIT, Banco de la Nación Argentina, YPF S.A.
      expect(referenceCuitDigit('3369345023')).toBe(9);
      expect(referenceCuitDigit('3050001091')).toBe(2);
      expect(referenceCuitDigit('3054668997')).toBe(9);
      // The usual CNPJ example, and Petrobras.
      expect(referenceCnpjDigits('112223330001')).toBe('81');
      expect(referenceCnpjDigits('330001670001')).toBe('01');
    });
  });

  describe('normalizeTaxId', () => {
    it('removes dashes, dots, slashes and spaces', () => {
      expect(normalizeTaxId('20-12345678-6')).toBe('20123456786');
      expect(normalizeTaxId('11.222.333/0001-81')).toBe('11222333000181');
      expect(normalizeTaxId(' 20 12345678 6 ')).toBe('20123456786');
    });
  });

  describe('cuitCheckDigit', () => {
    it('computes the digit of well-known numbers', () => {
      expect(cuitCheckDigit('3369345023')).toBe(9);
      expect(cuitCheckDigit('3050001091')).toBe(2);
      expect(cuitCheckDigit('3054668997')).toBe(9);
      expect(cuitCheckDigit('2012345678')).toBe(6);
    });

    it('matches the reference on many numbers of every prefix', () => {
      let checked = 0;
      for (const prefix of [...PERSON_PREFIXES, ...ENTITY_PREFIXES]) {
        for (const document of documentNumbers(200)) {
          expect(cuitCheckDigit(`${prefix}${document}`)).toBe(referenceCuitDigit(`${prefix}${document}`));
          checked++;
        }
      }
      expect(checked).toBe(1400);
    });

    it('maps 11 to 0', () => {
      // A number whose weighted sum is a multiple of 11: 11 − 0 = 11, written 0.
      const zero = [...documentNumbers(2000)]
        .map((document) => `20${document}`)
        .find((first10) => referenceCuitDigit(first10) === 0);
      expect(zero).toBeDefined();
      expect(cuitCheckDigit(zero as string)).toBe(0);
    });

    it('returns undefined when the remainder leaves 10 (no valid number)', () => {
      const first10 = withoutCheckDigit('20');
      expect(cuitCheckDigit(first10)).toBeUndefined();
      for (let digit = 0; digit <= 9; digit++) {
        expect(cuitProblem(`${first10}${digit}`, ['person'])).toBe('has an invalid check digit');
      }
    });
  });

  describe('cuitProblem', () => {
    it('accepts valid person numbers with prefixes 20, 23, 24, 27', () => {
      for (const prefix of PERSON_PREFIXES) {
        const cuits = validCuits(prefix, 10);
        expect(cuits).toHaveLength(10);
        for (const cuit of cuits) expect(cuitProblem(cuit, ['person'])).toBeUndefined();
      }
      expect(cuitProblem('20123456786', ['person'])).toBeUndefined();
    });

    it('accepts valid entity numbers with prefixes 30, 33, 34 and well-known companies', () => {
      for (const prefix of ENTITY_PREFIXES) {
        for (const cuit of validCuits(prefix, 10)) expect(cuitProblem(cuit, ['entity'])).toBeUndefined();
      }
      for (const cuit of ['33693450239', '30500010912', '30546689979']) {
        expect(cuitProblem(cuit, ['entity'])).toBeUndefined();
      }
    });

    it('accepts separators: dashes, dots, spaces', () => {
      expect(cuitProblem('20-12345678-6', ['person'])).toBeUndefined();
      expect(cuitProblem('20.12345678.6', ['person'])).toBeUndefined();
      expect(cuitProblem('20 12345678 6', ['person'])).toBeUndefined();
      expect(cuitProblem('33-69345023-9', ['entity'])).toBeUndefined();
    });

    it('refuses a wrong check digit', () => {
      for (const cuit of [...validCuits('20', 5), ...validCuits('27', 5)]) {
        expect(cuitProblem(withWrongDigit(cuit), ['person'])).toBe('has an invalid check digit');
      }
      expect(cuitProblem('20-12345678-7', ['person'])).toBe('has an invalid check digit');
      expect(cuitProblem('33693450238', ['entity'])).toBe('has an invalid check digit');
    });

    it('refuses a wrong length and non-digits', () => {
      for (const value of [
        '2012345678',
        '201234567861',
        '',
        '20-1234567-6',
        '2O123456786',
        'abcdefghijk',
        '20+12345678+6',
      ]) {
        expect(cuitProblem(value, ['person'])).toBe('must be 11 digits');
      }
    });

    it('refuses a prefix not allowed for the kind', () => {
      const entity = validCuits('30', 1)[0];
      const person = validCuits('20', 1)[0];
      expect(cuitProblem(entity, ['person'])).toMatch(/^has an invalid type prefix 30/);
      expect(cuitProblem(person, ['entity'])).toMatch(/^has an invalid type prefix 20/);
      expect(cuitProblem(entity, ['person', 'entity'])).toBeUndefined();
      expect(cuitProblem(person, ['person', 'entity'])).toBeUndefined();
    });

    it('refuses unknown prefixes even with a matching check digit', () => {
      for (const prefix of ['00', '10', '21', '25', '31', '99']) {
        const [cuit] = validCuits(prefix, 1);
        expect(cuitProblem(cuit, ['person', 'entity'])).toMatch(/^has an invalid type prefix/);
      }
    });

    it('refuses everything when no kind is allowed', () => {
      expect(cuitProblem('20123456786', [])).toMatch(/^has an invalid type prefix 20/);
    });
  });

  describe('cnpjProblem', () => {
    it('accepts well-known CNPJs, with or without separators', () => {
      expect(cnpjProblem('11.222.333/0001-81')).toBeUndefined();
      expect(cnpjProblem('11222333000181')).toBeUndefined();
      expect(cnpjProblem('33.000.167/0001-01')).toBeUndefined();
    });

    it('accepts numbers whose digits the reference computes', () => {
      const bases = [...documentNumbers(30)].map(
        (document, i) => `${document}${String(i + 1).padStart(4, '0')}`,
      );
      for (const base of bases) {
        const cnpj = `${base}${referenceCnpjDigits(base)}`;
        expect(cnpjProblem(cnpj)).toBeUndefined();
      }
    });

    it('refuses a wrong first or second check digit', () => {
      expect(cnpjProblem('11222333000191')).toBe('has an invalid check digit');
      expect(cnpjProblem('11222333000182')).toBe('has an invalid check digit');
      expect(cnpjProblem('11.222.333/0001-80')).toBe('has an invalid check digit');
    });

    it('refuses a wrong length, other characters, and letters where the check digits go', () => {
      for (const value of [
        '1122233300018',
        '112223330001811',
        '',
        '11_222_333_0001_81',
        '12ABC34501DEAB',
        '12ÁBC34501DE35',
        '12ABC3450ßE35',
      ]) {
        expect(cnpjProblem(value)).toBe('must be 12 letters or digits and 2 check digits');
      }
    });

    it("accepts the alphanumeric CNPJ (from July 2026), in either case: Receita Federal's example 12.ABC.345/01DE-35", () => {
      expect(cnpjProblem('12ABC34501DE35')).toBeUndefined();
      expect(cnpjProblem('12.ABC.345/01DE-35')).toBeUndefined();
      expect(cnpjProblem('12.abc.345/01de-35')).toBeUndefined();
      expect(normalizeCnpj('12.abc.345/01de-35')).toBe('12ABC34501DE35');
      expect(normalizeCnpj('11.222.333/0001-81')).toBe('11222333000181');
    });

    it('checks an alphanumeric CNPJ by the ASCII value less 48 of each character (A 17 … Z 42)', () => {
      const bases = ['12ABC34501DE', 'ZZZZZZZZ0001', 'A1B2C3D4E5F6', '00000000000A', 'AAAAAAAAAAAA'];
      for (const base of bases) {
        const digits = referenceCnpjDigits(base);
        expect(cnpjProblem(`${base}${digits}`)).toBeUndefined();
        const wrong = `${base}${digits[0]}${(Number(digits[1]) + 1) % 10}`;
        expect(cnpjProblem(wrong)).toBe('has an invalid check digit');
      }
      expect(referenceCnpjDigits('12ABC34501DE')).toBe('35');
      // A letter O read as the digit 0 does not pass: 'O' counts 31.
      expect(cnpjProblem('11222333OOO181')).toBe('has an invalid check digit');
    });

    it('refuses repeated digits (00000000000000 even passes the arithmetic)', () => {
      expect(referenceCnpjDigits('000000000000')).toBe('00');
      for (let digit = 0; digit <= 9; digit++) {
        expect(cnpjProblem(String(digit).repeat(14))).toBe('is not a valid CNPJ');
      }
    });
  });

  describe('personTypeOf', () => {
    it('is Juridica for entity prefixes and Fisica for person prefixes', () => {
      for (const prefix of ENTITY_PREFIXES) expect(personTypeOf(validCuits(prefix, 1)[0])).toBe('Juridica');
      for (const prefix of PERSON_PREFIXES) expect(personTypeOf(validCuits(prefix, 1)[0])).toBe('Fisica');
      expect(personTypeOf('33-69345023-9')).toBe('Juridica');
      expect(personTypeOf('20-12345678-6')).toBe('Fisica');
    });
  });
});
