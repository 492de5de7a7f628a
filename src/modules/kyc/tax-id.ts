/**
 * Argentine CUIT/CUIL (11 digits: 2-digit type prefix, 8-digit document or
 * sequence, mod-11 check digit) and Brazilian CNPJ (14 characters: 12 letters or
 * digits, the alphanumeric form Brazil issues from July 2026, then two mod-11
 * check digits). Separators (`-`, `.`, `/`, spaces) are accepted on input; the
 * normalised value has none, and a CNPJ's letters in upper case (decision 0097).
 */

/** Prefixes of natural persons (CUIL, and a person's CUIT). */
export const PERSON_PREFIXES = ['20', '23', '24', '27'] as const;
/** Prefixes of legal entities (a company's CUIT). */
export const ENTITY_PREFIXES = ['30', '33', '34'] as const;

const CUIT_WEIGHTS = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2];

export function normalizeTaxId(value: string): string {
  return value.replace(/[\s./-]/g, '');
}

/** The check digit for the first 10 digits, or undefined when none exists (remainder 1: the number is not valid). */
export function cuitCheckDigit(first10: string): number | undefined {
  const sum = CUIT_WEIGHTS.reduce((acc, weight, i) => acc + weight * Number(first10[i]), 0);
  const digit = 11 - (sum % 11);
  if (digit === 11) return 0;
  if (digit === 10) return undefined;
  return digit;
}

export type CuitKind = 'person' | 'entity';

/** Why a CUIT/CUIL is not valid, or undefined when it is. */
export function cuitProblem(value: string, allowed: readonly CuitKind[]): string | undefined {
  const digits = normalizeTaxId(value);
  if (!/^\d{11}$/.test(digits)) return 'must be 11 digits';
  const prefix = digits.slice(0, 2);
  const prefixes: string[] = [
    ...(allowed.includes('person') ? PERSON_PREFIXES : []),
    ...(allowed.includes('entity') ? ENTITY_PREFIXES : []),
  ];
  if (!prefixes.includes(prefix))
    return `has an invalid type prefix ${prefix} (expected ${prefixes.join(', ')})`;
  if (cuitCheckDigit(digits.slice(0, 10)) !== Number(digits[10])) return 'has an invalid check digit';
  return undefined;
}

/** A CNPJ as stored: no separators, letters in upper case (decision 0097). */
export function normalizeCnpj(value: string): string {
  return normalizeTaxId(value).toUpperCase();
}

const CNPJ_WEIGHTS = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];

/**
 * A CNPJ check digit over `base` (12 characters for the first, 13 for the second): each character counts its ASCII
 * code less 48 (a digit its value, A 17 … Z 42, Receita Federal's rule for the alphanumeric CNPJ, which leaves every
 * numeric CNPJ's digits as they were), weighted 2 to 9 from the right, modulo 11.
 */
function cnpjCheckDigit(base: string): number {
  const weights = CNPJ_WEIGHTS.slice(CNPJ_WEIGHTS.length - base.length);
  const sum = weights.reduce((acc, weight, i) => acc + weight * (base.charCodeAt(i) - 48), 0);
  const rest = sum % 11;
  return rest < 2 ? 0 : 11 - rest;
}

/** Why a CNPJ is not valid, or undefined when it is. */
export function cnpjProblem(value: string): string | undefined {
  const raw = normalizeTaxId(value);
  // ASCII letters only, checked before the upper case (which turns some other letters into two: ß into SS).
  if (!/^[0-9A-Za-z]{12}\d{2}$/.test(raw)) return 'must be 12 letters or digits and 2 check digits';
  const cnpj = raw.toUpperCase();
  if (/^(\d)\1{13}$/.test(cnpj)) return 'is not a valid CNPJ';
  const first = cnpjCheckDigit(cnpj.slice(0, 12));
  if (first !== Number(cnpj[12]) || cnpjCheckDigit(cnpj.slice(0, 13)) !== Number(cnpj[13]))
    return 'has an invalid check digit';
  return undefined;
}

/**
 * Guesses the legal person type from a CUIT/CUIL prefix: Fisica (natural person) or Juridica (entity). Only for a
 * tax id typed by a client or sent by the rail: a party of this service is what its record says (a company is
 * Juridica whatever its tax id, a CNPJ too; decision 0086).
 */
export function personTypeOf(cuit: string): 'Fisica' | 'Juridica' {
  return (ENTITY_PREFIXES as readonly string[]).includes(normalizeTaxId(cuit).slice(0, 2))
    ? 'Juridica'
    : 'Fisica';
}
