import type { DataSource } from 'typeorm';

/** The instants compared: now and three more a season apart, so a daylight-saving rule that differs shows. */
const SEASON_MS = 91 * 24 * 3600 * 1000;

/** `YYYY-MM-DD HH:MM:SS` of an instant on a zone's calendar, as this runtime's ICU reads the zone. */
function localTime(format: Intl.DateTimeFormat, at: Date): string {
  const part = Object.fromEntries(format.formatToParts(at).map(({ type, value }) => [type, value]));
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second}`;
}

/**
 * Why the database does not read `timeZone` as this runtime does, or undefined when it does. The operated amounts'
 * periods are taken in the database (wallet_periods, decision 0098) and checked by the configuration in the
 * runtime (Intl): a name only one of them knows, or knows by other rules, would fail every transfer or count it in
 * another month than the API's reads show. Asked once at start (decision 0098).
 */
export async function timeZoneMismatch(
  dataSource: DataSource,
  timeZone: string,
): Promise<string | undefined> {
  const format = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const now = Date.now();
  const instants = [0, 1, 2, 3].map(
    (season) => new Date(Math.floor((now + season * SEASON_MS) / 1000) * 1000),
  );
  let rows: { local: string }[];
  try {
    rows = (await dataSource.query(
      `SELECT to_char(i AT TIME ZONE $1, 'YYYY-MM-DD HH24:MI:SS') AS local
         FROM unnest($2::timestamptz[]) WITH ORDINALITY AS u(i, n) ORDER BY n`,
      [timeZone, instants.map((instant) => instant.toISOString())],
    )) as { local: string }[];
  } catch (error) {
    // Only "time zone not recognized" is the setting's fault; any other failure (a connection lost, a timeout) is
    // the database's, and takes the start's usual "cannot start" line.
    if ((error as { code?: unknown }).code !== '22023') throw error;
    return `PostgreSQL does not know it (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
  }
  for (const [i, instant] of instants.entries()) {
    const expected = localTime(format, instant);
    if (rows[i]?.local !== expected) {
      return `PostgreSQL reads ${instant.toISOString()} as ${rows[i]?.local} there, this runtime as ${expected}`;
    }
  }
  return undefined;
}
