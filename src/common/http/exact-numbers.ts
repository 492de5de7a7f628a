import { Decimal } from 'decimal.js';
import { ValidationFailedError } from '../errors/domain-errors.js';

/**
 * A JSON number literal that a JavaScript number cannot hold exactly (decision 0099): JSON.parse rounds it, and
 * every reader after it (an amount's `String(value)`, a KYC section stored as JSON) sees a value the client did not
 * send. Such a literal is refused at its path, before anything is validated or written.
 *
 * A literal of at most 15 significant digits whose value lies in the doubles' normal range is held exactly (its
 * shortest round-trip text has the same value). So an inexact literal has 16 significant digits or more, which
 * are one run of 16 or more digits and dots in the text, or an exponent of 3 digits or more. Bodies without either
 * (most of them) are not scanned; a body with one (a 22-digit CVU string is one) is scanned once, strings
 * skipped.
 */
const CANDIDATE = /[\d.]{16}|[\d.][eE][+-]?\d{3}/;

const EXPONENT = /[eE]/;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
const DOT = 0x2e;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** How many bodies were scanned, for tests: a body without a candidate is not (see CANDIDATE). */
export const exactNumberScans = { scanned: 0 };

/** The path of `property` under `prefix`, as class-validator's items name it (`a.b`, `items[0]`, `a[0]` too). */
export function childPath(prefix: string, property: string): string {
  return /^\d+$/.test(property) ? `${prefix}[${property}]` : prefix ? `${prefix}.${property}` : property;
}

/** A JSON number literal whose value a JavaScript number holds exactly (-0 included), compared as decimals. */
export function isExactNumber(literal: string): boolean {
  const value = Number(literal);
  if (!Number.isFinite(value)) return false;
  // A nonzero literal that underflows to 0 (decimal.js, too, gives 0 below 1e-9e15, so ask the digits).
  if (value === 0) return !/[1-9]/.test(literal.split(/[eE]/)[0]);
  const shortest = String(value);
  // Most exact literals are their shortest round-trip text but for a fraction's trailing zeros: no Decimal for those.
  let end = literal.length;
  if (literal.includes('.') && !EXPONENT.test(literal)) {
    while (literal.charCodeAt(end - 1) === ZERO) end -= 1;
    if (literal.charCodeAt(end - 1) === DOT) end -= 1;
  }
  if (end === shortest.length && literal.startsWith(shortest)) return true;
  return new Decimal(literal).eq(new Decimal(shortest));
}

/** An open object or array while scanning: the element's index, or where the current key's string lies. */
interface Container {
  array: boolean;
  index: number;
  keyStart: number;
  keyEnd: number;
}

/** The index just after the string that opens at `start` (valid JSON: its closing quote exists). */
function stringEnd(text: string, start: number): number {
  let quote = text.indexOf('"', start + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return quote + 1;
    quote = text.indexOf('"', quote + 1);
  }
}

/** The path of the value being read, built only for the error that names it. */
function pathOf(text: string, stack: Container[]): string {
  let path = '';
  for (const container of stack) {
    path = container.array
      ? `${path}[${container.index}]`
      : childPath(path, JSON.parse(text.slice(container.keyStart, container.keyEnd)) as string);
  }
  return path;
}

/**
 * The first number literal of `text` (JSON that JSON.parse accepted) that a JavaScript number cannot hold exactly,
 * with its path; undefined when there is none. One pass: strings are skipped (their escapes honoured), objects and
 * arrays tracked for the path. Every literal is checked, a duplicate key's earlier value too: the body as written
 * holds a number the service would read as another.
 */
export function findInexactNumber(text: string): { path: string; literal: string } | undefined {
  if (!CANDIDATE.test(text)) return undefined;
  exactNumberScans.scanned += 1;
  const stack: Container[] = [];
  let top: Container | undefined;
  let expectKey = false;
  const length = text.length;
  let i = 0;
  while (i < length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (expectKey && top) {
        top.keyStart = i;
        top.keyEnd = end;
        expectKey = false;
      }
      i = end;
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      let end = i + 1;
      let exponent = false;
      for (; end < length; end++) {
        const d = text.charCodeAt(end);
        if (d === 0x65 || d === 0x45) exponent = true;
        else if (!((d >= ZERO && d <= NINE) || d === DOT || d === 0x2b || d === MINUS)) break;
      }
      // Without an exponent, fewer than 16 characters are at most 15 digits in the normal range: exact.
      if (end - i >= 16 || exponent) {
        const literal = text.slice(i, end);
        if (!isExactNumber(literal)) return { path: pathOf(text, stack), literal };
      }
      i = end;
    } else {
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        top = { array: c === OPEN_ARRAY, index: 0, keyStart: 0, keyEnd: 0 };
        stack.push(top);
        expectKey = !top.array;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        stack.pop();
        top = stack[stack.length - 1];
      } else if (c === COMMA && top) {
        if (top.array) top.index += 1;
        else expectKey = true;
      }
      i += 1;
    }
  }
  return undefined;
}

/** Refuses a body (its JSON text) with a number literal a JavaScript number cannot hold exactly: a 400 at its path. */
export function assertExactNumbers(text: string): void {
  const found = findInexactNumber(text);
  if (!found) return;
  const { path, literal } = found;
  throw ValidationFailedError.single(
    path,
    'invalid',
    Number.isFinite(Number(literal))
      ? `${path} has more digits than a number can hold exactly`
      : `${path} is out of the range of a number`,
  );
}
