import {
  ForbiddenError,
  NotFoundError,
  ValidationFailedError,
  type ForbiddenReason,
  type ValidationItemType,
} from '#common/errors/domain-errors.js';
import { pgErrorOf } from '#common/database/sql.js';
import type { TransferRefusal } from './transfer-function.contract.js';

/**
 * A refusal raised by the database functions (wallet_refuse, src/modules/wallet/sql/wallet_refuse.sql) as the
 * domain error it stands for: SQLSTATE WT400 → 400 at DETAIL (the path) of type HINT; WT403 → 403 with reason
 * HINT; WT404 (wallet_reverse_transfer: an unknown transfer) → 404 for DETAIL (the item). Undefined for any
 * other error.
 */
export function refusalOf(error: unknown): Error | undefined {
  const driver = pgErrorOf(error);
  if (driver.code === 'WT404') return new NotFoundError(driver.detail ?? '', driver.message ?? 'Not found');
  if (driver.code !== 'WT400' && driver.code !== 'WT403') return undefined;
  return refusalError({
    code: driver.code,
    path: driver.detail ?? '',
    type: driver.hint ?? 'invalid',
    message: driver.message ?? 'refused',
  });
}

/** A refusal returned by wallet_create_transfers for one transfer of a group, as its domain error. */
export function refusalError(refusal: TransferRefusal): Error {
  if (refusal.code === 'WT403') return new ForbiddenError(refusal.type as ForbiddenReason, refusal.message);
  return ValidationFailedError.single(refusal.path, refusal.type as ValidationItemType, refusal.message);
}
