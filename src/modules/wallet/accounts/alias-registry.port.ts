/**
 * Aliases outside this service: the clearing house's registry, where an alias names one account in the whole
 * system (DOMAIN.md C3). An account here never takes an alias another institution's account has: the counterparty
 * lookup answers this service's own accounts first, so such an alias would turn payments meant for that account
 * towards ours (decision 0053). Provided by the transfers module from its directory (DirectoryModule); a process
 * that loads the wallet without it fails at boot.
 */
export const ALIAS_REGISTRY = Symbol('ALIAS_REGISTRY');

export interface AliasRegistry {
  /** Whether an account of another institution has `alias` (case-insensitive, as aliases are compared). */
  takenElsewhere(alias: string): Promise<boolean>;
}
