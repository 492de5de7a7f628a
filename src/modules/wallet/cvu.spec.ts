import { buildCvu, checkDigit, isCvu, isValidCbu } from './cvu.js';

/**
 * Reference check digits written from DOMAIN.md C1, independent of the code
 * under test: left-to-right weights 7,1,3,9,7,1,3 over block 1 (positions 1-7)
 * and 3,9,7,1,3,9,7,1,3,9,7,1,3 over block 2 (positions 9-21), check = (10 − Σ
 * mod 10) mod 10.
 */
const BLOCK1_WEIGHTS = [7, 1, 3, 9, 7, 1, 3];
const BLOCK2_WEIGHTS = [3, 9, 7, 1, 3, 9, 7, 1, 3, 9, 7, 1, 3];

function referenceDigit(digits: string, weights: number[]): number {
  expect(digits).toHaveLength(weights.length);
  const sum = [...digits].reduce((acc, digit, i) => acc + Number(digit) * weights[i], 0);
  return (10 - (sum % 10)) % 10;
}

/** Both check digits of a 22-digit CBU/CVU, by the reference algorithm. */
function referenceValid(value: string): boolean {
  return (
    /^\d{22}$/.test(value) &&
    referenceDigit(value.slice(0, 7), BLOCK1_WEIGHTS) === Number(value[7]) &&
    referenceDigit(value.slice(8, 21), BLOCK2_WEIGHTS) === Number(value[21])
  );
}

describe('CBU/CVU check digits', () => {
  it("accepts DOMAIN.md's valid example and refuses the one with a wrong block 1", () => {
    expect(isValidCbu('2850590940090418135201')).toBe(true);
    expect(isValidCbu('2810590940090418135201')).toBe(false);
    expect(referenceValid('2850590940090418135201')).toBe(true);
    expect(referenceValid('2810590940090418135201')).toBe(false);
  });

  it('computes the check digit of each block of the example', () => {
    // 285 0590 [9] 4009041813520 [1]
    expect(checkDigit('2850590')).toBe(9);
    expect(checkDigit('4009041813520')).toBe(1);
    // The wrong entity code 281 needs another block 1 digit.
    expect(checkDigit('2810590')).not.toBe(9);
    expect(checkDigit('2810590')).toBe(referenceDigit('2810590', BLOCK1_WEIGHTS));
  });

  it('agrees with the reference algorithm on many blocks', () => {
    let seed = 20_260_101;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
    for (let i = 0; i < 500; i++) {
      const block1 = String(next() % 10_000_000).padStart(7, '0');
      const block2 = `${String(next() % 10_000_000).padStart(7, '0')}${String(next() % 1_000_000).padStart(6, '0')}`;
      expect(checkDigit(block1)).toBe(referenceDigit(block1, BLOCK1_WEIGHTS));
      expect(checkDigit(block2)).toBe(referenceDigit(block2, BLOCK2_WEIGHTS));
    }
  });

  it('refuses a wrong block 2 digit, wrong lengths and non-digits', () => {
    expect(isValidCbu('2850590940090418135202')).toBe(false);
    expect(isValidCbu('285059094009041813520')).toBe(false);
    expect(isValidCbu('28505909400904181352011')).toBe(false);
    expect(isValidCbu('285059094009041813520a')).toBe(false);
    expect(isValidCbu(' 2850590940090418135201')).toBe(false);
    expect(isValidCbu('')).toBe(false);
  });

  it('every single-digit change of a valid number is detected', () => {
    const valid = '2850590940090418135201';
    for (let position = 0; position < 22; position++) {
      for (let digit = 0; digit <= 9; digit++) {
        if (String(digit) === valid[position]) continue;
        const changed = `${valid.slice(0, position)}${digit}${valid.slice(position + 1)}`;
        // Weight 1 and 3, 7, 9 are all coprime with 10: a single change always breaks its block.
        expect(isValidCbu(changed)).toBe(false);
      }
    }
  });

  it('tells a CVU (000 entity) from a CBU', () => {
    expect(isCvu('2850590940090418135201')).toBe(false);
    const cvu = buildCvu('0031', 1);
    expect(isCvu(cvu)).toBe(true);
    expect(isCvu(`${cvu.slice(0, 21)}${(Number(cvu[21]) + 1) % 10}`)).toBe(false);
  });
});

describe('buildCvu', () => {
  const sequences: (number | bigint)[] = [0, 1, 2, 9, 10, 42, 1234, 99_999, 123_456_789, 999_999_999_999n];

  it.each(sequences.map((sequence) => [sequence]))(
    'client number %s: 22 digits, 000 + PSP code, both check digits valid',
    (sequence) => {
      const cvu = buildCvu('0031', sequence);
      expect(cvu).toMatch(/^\d{22}$/);
      expect(cvu.startsWith('0000031')).toBe(true);
      expect(referenceValid(cvu)).toBe(true);
      expect(isValidCbu(cvu)).toBe(true);
      // Block 2: a reserved 0, then the client number left-padded to 12 digits.
      expect(cvu.slice(8, 21)).toBe(`0${String(sequence).padStart(12, '0')}`);
    },
  );

  it('distinct client numbers give distinct CVUs; the PSP code is configuration', () => {
    const issued = new Set(Array.from({ length: 2000 }, (_, i) => buildCvu('0031', i)));
    expect(issued.size).toBe(2000);
    const other = buildCvu('4567', 7);
    expect(other.startsWith('0004567')).toBe(true);
    expect(referenceValid(other)).toBe(true);
    expect(other).not.toBe(buildCvu('0031', 7));
  });

  it('refuses a PSP code that is not 4 digits and a client number out of range', () => {
    expect(() => buildCvu('31', 1)).toThrow(/PSP code/);
    expect(() => buildCvu('00031', 1)).toThrow(/PSP code/);
    expect(() => buildCvu('00a1', 1)).toThrow(/PSP code/);
    expect(() => buildCvu('0031', -1)).toThrow(/out of range/);
    expect(() => buildCvu('0031', 1_000_000_000_000n)).toThrow(/out of range/);
  });
});
