import type { Principal } from '#common/auth/principal.js';
import { ForbiddenError } from '#common/errors/domain-errors.js';

/**
 * What identifies a user or a company is what KYC verified and what others see of it (the counterparty lookup
 * shows its name, a transfer its tax id): the application's to change, not the owner's. With the owner's own
 * token (a user token, whose `sub` is the user or the company) a change of any of it is 403
 * INSUFFICIENT_PERMISSIONS and nothing of the request is applied; sending what is stored is no change and passes
 * (decisions 0054 and 0059). `changed` names the fields (or KYC sections) the request would change, as the
 * request names them. The owner still gives them first: when it registers itself, and a company's KYC section
 * that holds nothing yet.
 */
export function refuseOwnIdentityChange(principal: Principal, changed: readonly string[]): void {
  if (principal.kind === 'subject' && changed.length > 0) {
    throw new ForbiddenError(
      'INSUFFICIENT_PERMISSIONS',
      `${changed.join(', ')}: what identifies the owner is changed by the application`,
    );
  }
}
