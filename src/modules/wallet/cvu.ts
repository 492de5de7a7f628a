/**
 * CBU/CVU: 22 digits in two blocks, each ending in a check digit (weights
 * 3,1,7,9 repeating from the rightmost digit of the block; check = (10 − Σ mod
 * 10) mod 10). Block 1: entity (3) + branch (4) + check. Block 2: 13-digit
 * account + check. A CVU's block 1 starts with 000 (a PSP, not a bank).
 */

const WEIGHTS = [3, 1, 7, 9];

export function checkDigit(digits: string): number {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    sum += Number(digits[digits.length - 1 - i]) * WEIGHTS[i % 4];
  }
  return (10 - (sum % 10)) % 10;
}

export function isValidCbu(value: string): boolean {
  if (!/^\d{22}$/.test(value)) return false;
  return (
    checkDigit(value.slice(0, 7)) === Number(value[7]) && checkDigit(value.slice(8, 21)) === Number(value[21])
  );
}

export function isCvu(value: string): boolean {
  return isValidCbu(value) && value.startsWith('000');
}

/**
 * Issues the CVU for client number `sequence` of the PSP `pspCode` (4 digits,
 * configuration): `000` + PSP + check, then a reserved `0` + the 12-digit client
 * number + check.
 */
export function buildCvu(pspCode: string, sequence: bigint | number): string {
  if (!/^\d{4}$/.test(pspCode)) throw new Error('the PSP code must be 4 digits');
  const client = BigInt(sequence);
  if (client < 0n || client > 999_999_999_999n) throw new Error('CVU client number out of range');
  const block1 = `000${pspCode}`;
  const block2 = `0${client.toString().padStart(12, '0')}`;
  return `${block1}${checkDigit(block1)}${block2}${checkDigit(block2)}`;
}
