import { ValidationFailedError } from '../errors/domain-errors.js';
import { assertExactNumbers, exactNumberScans, findInexactNumber, isExactNumber } from './exact-numbers.js';

const CVU = '0000142300000000012342';

describe('isExactNumber: the value written against the value JSON.parse gives, as decimals', () => {
  it.each([
    '0.30000000000000004',
    '0.1',
    '100',
    '100.00',
    '-0',
    '-0.0e5',
    '9007199254740992',
    '1e23',
    '1E+2',
    '123456789012345',
    '999999999999.99',
    '5e-324',
    '1.7976931348623157e308',
    '0.00000000000000001',
    '-12.5e-3',
  ])('%s is held exactly', (literal) => expect(isExactNumber(literal)).toBe(true));

  it.each([
    '0.99999999999999999',
    '100.0000000000000001',
    '9007199254740993',
    '-9007199254740993',
    '12345678901234567890',
    '1e400',
    '-1e400',
    '1e-400',
    '-1E-400',
    '1e-9000000000000000001',
    '0.1000000000000000000001e5',
  ])('%s is not', (literal) => expect(isExactNumber(literal)).toBe(false));
});

describe('findInexactNumber: one pass over the JSON text, the first inexact literal at its path', () => {
  const at = (text: string) => {
    JSON.parse(text); // every text here is JSON, as after the middleware's parse
    return findInexactNumber(text);
  };

  it.each([
    ['at the top', '{"amount":0.99999999999999999}', 'amount'],
    ['nested objects', '{"a":{"b":{"c":100.0000000000000001}}}', 'a.b.c'],
    ['in arrays of arrays', '{"a":[1,[2,3,[4,9007199254740993]]]}', 'a[1][2][1]'],
    ['objects in arrays', '{"items":[{"x":1},{"x":2,"y":[0,{"z":-1e400}]}]}', 'items[1].y[1].z'],
    ['after a closed array', '{"a":[1,2],"b":1e-400}', 'b'],
    ['a key with escapes, decoded', '{"am\\u006funt":1e400}', 'amount'],
    ['a key with an escaped quote', '{"a\\"b":{"c\\\\":1e400}}', 'a"b.c\\'],
    ['a digit key, as class-validator names it', '{"a":{"0":1e400}}', 'a[0]'],
    ['an empty key', '{"":{"x":1e400}}', 'x'],
    ['negative, with an exponent', '{"a":[-0.99999999999999999e3]}', 'a[0]'],
    ['an upper-case exponent with a sign', '{"a":1E+400}', 'a'],
    ['whitespace everywhere', ' {\n "a" : [ 1 , { "b" : 1e400 } ] \n} ', 'a[1].b'],
    ['after strings with escaped quotes and brackets', '{"s":"x\\",[{\\\\","t":"]}","n":1e400}', 'n'],
    ['after true, false and null', '{"t":true,"f":false,"n":null,"x":[null,true,1e400]}', 'x[2]'],
    ['the first of two', '{"a":1e400,"b":1e-400}', 'a'],
    ['a duplicate key: the earlier value too', '{"amount":0.99999999999999999,"amount":5}', 'amount'],
    ['a duplicate key: the later value', '{"amount":5,"amount":1e400}', 'amount'],
    ['a key after an object value', '{"a":{"b":1},"c":{"d":[{}, 1e400]}}', 'c.d[1]'],
  ])('%s', (_name, text, path) => {
    expect(at(text)?.path).toBe(path);
  });

  it.each([
    ['0.30000000000000004 and other exact values', '{"a":0.30000000000000004,"b":[1e23,-0,5e-324,100.00]}'],
    ['22-digit CVU strings and normal amounts', `{"identifier":"${CVU}","cvu":["${CVU}"],"amount":12.5}`],
    ['inexact-looking digits inside strings', '{"a":"0.99999999999999999","b":"1e400 \\"1e400\\""}'],
    ['a key that looks like a number', '{"0.99999999999999999":1,"1e400":[2]}'],
    ['empty containers', '{"a":{},"b":[],"c":[[],{}],"d":"1234567890123456"}'],
  ])('%s: none', (_name, text) => {
    expect(at(text)).toBeUndefined();
  });

  it('scans only a body with a candidate (a run of 16 digits or dots, or a 3-digit exponent), once', () => {
    const before = exactNumberScans.scanned;
    expect(at('{"amount":12.34,"concept":"VAR","summary":"alquiler 2026"}')).toBeUndefined();
    expect(at('{"a":1e99,"b":123456789012345}')).toBeUndefined();
    expect(exactNumberScans.scanned).toBe(before);
    expect(at(`{"identifier":"${CVU}","amount":12.34}`)).toBeUndefined();
    expect(exactNumberScans.scanned).toBe(before + 1);
  });

  it('answers a 100,000-element array of long numbers in one pass', () => {
    const text = `{"a":[${new Array<string>(100_000).fill('0.1000000000000000').join(',')},1e400]}`;
    expect(at(text)?.path).toBe('a[100000]');
  });
});

describe('assertExactNumbers: the validation item', () => {
  const itemOf = (text: string) => {
    try {
      assertExactNumbers(text);
      return undefined;
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationFailedError);
      return (error as ValidationFailedError).items;
    }
  };

  it('names the path and the cause, type invalid', () => {
    expect(itemOf('{"amount":0.99999999999999999}')).toStrictEqual([
      { path: 'amount', type: 'invalid', message: 'amount has more digits than a number can hold exactly' },
    ]);
    expect(itemOf('{"data":{"capital":[-1e400]}}')).toStrictEqual([
      {
        path: 'data.capital[0]',
        type: 'invalid',
        message: 'data.capital[0] is out of the range of a number',
      },
    ]);
    expect(itemOf('{"amount":0.30000000000000004}')).toBeUndefined();
  });
});
