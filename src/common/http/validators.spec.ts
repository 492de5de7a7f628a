import { validate } from 'class-validator';
import { codePointLength, Length, MaxLength } from './validators.js';

class Sms {
  @Length(1, 4)
  message: unknown;
}

class Name {
  @MaxLength(3)
  name: unknown;
}

const messages = async (instance: object) =>
  (await validate(instance)).flatMap((error) => Object.values(error.constraints ?? {}));

const sms = (message: unknown) => Object.assign(new Sms(), { message });
const name = (value: unknown) => Object.assign(new Name(), { name: value });

describe('codePointLength', () => {
  it('counts code points: a surrogate pair is one, a variation selector is one, a lone surrogate is one', () => {
    expect(codePointLength('')).toBe(0);
    expect(codePointLength('abc')).toBe(3);
    expect(codePointLength('😀😀')).toBe(2);
    expect(codePointLength('❤️')).toBe(2);
    expect(codePointLength('\ud83d')).toBe(1);
    expect(codePointLength('a\ude00b')).toBe(3);
    expect(codePointLength('ñandú')).toBe([...'ñandú'].length);
  });
});

describe('Length and MaxLength (code points, class-validator names and messages)', () => {
  it('accepts a string within the limits, emoji counted once', async () => {
    expect(await messages(sms('😀😀😀😀'))).toStrictEqual([]);
    expect(await messages(sms('❤️❤️'))).toStrictEqual([]);
    expect(await messages(name('❤️a'))).toStrictEqual([]);
  });

  it('counts U+FE0F, which class-validator skips: two hearts and a letter are five code points', async () => {
    expect(await messages(sms('❤️❤️a'))).toStrictEqual([
      'message must be shorter than or equal to 4 characters',
    ]);
    expect(await messages(name('❤️❤️'))).toStrictEqual([
      'name must be shorter than or equal to 3 characters',
    ]);
  });

  it('says which end was passed, and refuses what is not a string', async () => {
    expect(await messages(sms(''))).toStrictEqual(['message must be longer than or equal to 1 characters']);
    expect(await messages(sms(12))).toHaveLength(1);
    expect(await messages(name(['abc']))).toHaveLength(1);
    const [error] = await validate(sms('abcde'));
    expect(Object.keys(error.constraints ?? {})).toStrictEqual(['isLength']);
    const [nameError] = await validate(name('abcd'));
    expect(Object.keys(nameError.constraints ?? {})).toStrictEqual(['maxLength']);
  });
});
