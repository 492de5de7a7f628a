/** The environment as loadConfig receives it: process.env, or a test's own object. */
export type Env = Record<string, string | undefined>;

/**
 * What every config section reads its variables with. A bad value adds one line to `problems` (ConfigError's
 * words) and yields the default, so one start-up reports every bad setting at once.
 */
export interface EnvReaders {
  /** The trimmed value; blank counts as unset. */
  str(name: string): string | undefined;
  int(name: string, def: number, min: number, max: number): number;
  bool(name: string, def: boolean): boolean;
  /**
   * A URL of one of `protocols`. `credentials: false` refuses a user or password in it (a peer that takes a
   * bearer token: credentials in its URL would reach error messages, which quote the URL).
   */
  url(name: string, protocols: string[], options?: { credentials: boolean }): string | undefined;
  choice<T extends string>(name: string, allowed: readonly T[], def: T): T;
  readonly problems: string[];
}

export function envReaders(env: Env, problems: string[]): EnvReaders {
  const str = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === undefined) return def;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return def;
    }
    return Number(raw);
  };
  const bool = (name: string, def: boolean): boolean => {
    const raw = str(name);
    if (raw === undefined) return def;
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return def;
  };
  const url = (name: string, protocols: string[], options = { credentials: true }): string | undefined => {
    const raw = str(name);
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) throw new Error();
      if (!options.credentials && (u.username || u.password)) {
        problems.push(`${name} must not carry a user or password`);
        return undefined;
      }
      return raw;
    } catch {
      problems.push(`${name} must be a ${protocols.join(' or ')} URL`);
      return undefined;
    }
  };
  const choice = <T extends string>(name: string, allowed: readonly T[], def: T): T => {
    const raw = str(name) ?? def;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    problems.push(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`);
    return def;
  };
  return { str, int, bool, url, choice, problems };
}

const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `250ms`, `5s`, `5m`, `2h`, `1d` in milliseconds; undefined for anything else. */
export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text.trim());
  return m ? Number(m[1]) * UNIT_MS[m[2]] : undefined;
}
