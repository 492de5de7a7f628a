import { aliasDigitsFor, ALIAS_PATTERN, ALIAS_WORDS, generateAlias } from './alias.js';

describe('AccountAlias', () => {
  it('the pattern is 6 to 20 letters, digits, dots and hyphens (DOMAIN.md C3)', () => {
    for (const alias of ['abcdef', 'luna.mate.rio', 'ABC-123.x', '123456', 'a'.repeat(20), 'Casa.Azul-7']) {
      expect(ALIAS_PATTERN.test(alias)).toBe(true);
    }
    for (const alias of [
      '',
      'abcde',
      'a'.repeat(21),
      'luna mate',
      'luna_mate',
      'luna,mate',
      'luña.mate',
      'luna.mate\n',
      'luna/mate.rio',
      'luna@mate.rio',
    ]) {
      expect(ALIAS_PATTERN.test(alias)).toBe(false);
    }
  });

  it('the word list is short lowercase Spanish words without repeats', () => {
    expect(new Set(ALIAS_WORDS).size).toBe(ALIAS_WORDS.length);
    expect(ALIAS_WORDS.length).toBeGreaterThanOrEqual(100);
    for (const word of ALIAS_WORDS) expect(word).toMatch(/^[a-z]{2,6}$/);
  });

  it('generated aliases are three words joined by dots and match the pattern', () => {
    const words = new Set(ALIAS_WORDS);
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const alias = generateAlias();
      expect(alias).toMatch(ALIAS_PATTERN);
      const parts = alias.split('.');
      expect(parts).toHaveLength(3);
      for (const part of parts) expect(words.has(part)).toBe(true);
      seen.add(alias);
    }
    // Random, not a fixed sequence: 2000 draws from ~1.7 million combinations are nearly all distinct.
    expect(seen.size).toBeGreaterThan(1950);
  });

  it('even the longest combination fits 20 characters', () => {
    const longest = [...ALIAS_WORDS].sort((a, b) => b.length - a.length)[0];
    expect(ALIAS_PATTERN.test([longest, longest, longest].join('.'))).toBe(true);
  });

  it('after a collision, aliases are drawn with digits: a far larger space, still within the pattern', () => {
    expect([0, 1, 2, 3, 4, 5].map(aliasDigitsFor)).toEqual([0, 2, 2, 4, 4, 4]);
    const words = new Set(ALIAS_WORDS);
    for (const digits of [2, 4]) {
      const seen = new Set<string>();
      for (let i = 0; i < 2000; i++) {
        const alias = generateAlias(digits);
        expect(alias).toMatch(ALIAS_PATTERN);
        const match = new RegExp(`^([a-z]+)\\.([a-z]+)\\.([a-z]+)(\\d{${digits}})$`).exec(alias);
        expect(match).not.toBeNull();
        for (const part of match!.slice(1, 4)) expect(words.has(part)).toBe(true);
        seen.add(alias);
      }
      expect(seen.size).toBeGreaterThan(1990); // draws from about 1.16 million × 10^digits
    }
  });
});
