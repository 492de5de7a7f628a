/**
 * Recorded HTTP answers, masked so that two runs of the same deterministic workload give the same text
 * (test/read-routes-recorded.e2e-spec.ts). Only what a run draws at random is masked, each kind of value by a
 * placeholder that keeps what can be compared:
 *
 * - uuids: `<uuid:N>`, N in order of first appearance over the whole recording (equal ids stay equal);
 * - CVUs and aliases the service issued to the run's accounts: `<cvu:N>`, `<alias:N>`, N in order of opening;
 *   the key ids of the run's applications (thumbprints of random keys): `<key:N>`;
 * - ISO 8601 instants of the run: `<ts:K>`, written during step K of the workload (the steps are separated by
 *   instants taken while nothing runs, so each time falls in one step whatever the machine's speed; after the
 *   last step, K is the reads), or `<ts:=K>`, exactly the instant that ends step K (a query's `at`, `from`,
 *   `to`); with the text's precision and zone when not milliseconds and `Z` (`<ts:3|6Z>` is a microsecond one).
 *   Order is kept from step to step; within one step it is not: two clock readings less than a millisecond
 *   apart (a record's `at` and the row's `created`) are equal in one run and not in the next, so numbering the
 *   distinct values would not give the same text twice. Times far from the run (the epoch, 2000-01-01) are
 *   kept; times of the template database, before the run, are `<ts:before the run>`;
 * - clearing ids (`CLR` + the rail's clock in ms + 8 random hex digits): `<clearing:N>`, N in order of first
 *   appearance;
 * - the name of the OS user who runs the test, which CLI actors carry (`"principal":"<os-user>"`);
 * - epoch seconds (`"timestamp":1763…` of the events): `<epoch>`, or `<epoch:went back>` when smaller than the
 *   previous one of the same answer (whether two events fall in one second is chance, their order is not).
 *
 * Amounts, statuses, counts, sequence numbers (posting and audit ids), ordering and every other byte are kept.
 */

export interface Answer {
  /** What is asked, in words. */
  name: string;
  /** Method, path and query as sent (masked like the body). */
  request: string;
  status: number;
  contentType: string;
  /** Whether an X-Next-Cursor header came with it (its value carries an id and a time: not recorded). */
  next: boolean;
  /** Rows of a list that share their time (their order then follows their random ids): see canonicalTies. */
  ties?: string;
  body: string;
}

const UUID = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/g;
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?/g;
const CLEARING = /CLR\d{13}[0-9A-F]{8}/g;
const EPOCH = /"timestamp":(\d{9,11})(?=[,}])/g;

/** The instant in microseconds since the epoch (Date keeps milliseconds only). */
function micros(text: string, fraction: string | undefined, zone: string | undefined): number {
  const seconds = text.slice(0, 19);
  const base = Date.parse(`${seconds}${zone && zone !== 'Z' ? zone : 'Z'}`);
  const sub = Number(((fraction ?? '') + '000000').slice(0, 6));
  return base * 1000 + sub;
}

const DAY_US = 86_400_000_000;

const format = (fraction: string | undefined, zone: string | undefined): string =>
  `${fraction?.length ?? 0}${zone ?? ''}`;

/** Replaces every occurrence of each value by its placeholder. */
function replaceKnown(text: string, values: Map<string, string>): string {
  let out = text;
  for (const [value, placeholder] of values) out = out.split(value).join(placeholder);
  return out;
}

export interface Issued {
  cvus: string[];
  aliases: string[];
  /** The key ids (JWK thumbprints of random keys) of the run's applications. */
  keyIds: string[];
  /** The OS user running the test (os.userInfo().username): the principal of a CLI actor. */
  osUser: string;
}

/**
 * The recording masked (see the top of this file); `issued` in the order the accounts were opened, `timeline` the
 * instants (ms since the epoch) that separate the workload's steps: the first before anything, the last after it.
 */
export function maskAnswers(
  answers: readonly Answer[],
  issued: Issued,
  timeline: readonly number[],
): Answer[] {
  const known = new Map<string, string>();
  issued.cvus.forEach((cvu, i) => known.set(cvu, `<cvu:${i + 1}>`));
  issued.aliases.forEach((alias, i) => known.set(alias, `<alias:${i + 1}>`));
  issued.keyIds.forEach((keyId, i) => known.set(keyId, `<key:${i + 1}>`));
  known.set(`"principal":"${issued.osUser}"`, '"principal":"<os-user>"');
  known.set(`cli:${issued.osUser}`, 'cli:<os-user>');
  const texts = answers.map((answer) => ({
    ...answer,
    request: replaceKnown(answer.request, known),
    body: replaceKnown(answer.body, known),
  }));

  const instantOf = (text: string, fraction?: string, zone?: string): string => {
    const at = micros(text, fraction, zone);
    const shape = format(fraction, zone);
    const suffix = shape === '3Z' ? '' : `|${shape}`;
    const start = timeline[0] * 1000;
    // Constants (the epoch, a date of 2000, …) are kept; the template database's times are not the run's.
    if (at < start - DAY_US || at > Date.now() * 1000 + DAY_US) return text;
    if (at < start) return `<ts:before the run${suffix}>`;
    const boundary = timeline.findIndex((ms) => ms * 1000 === at);
    if (boundary >= 0) return `<ts:=${boundary}${suffix}>`;
    return `<ts:${timeline.filter((ms) => ms * 1000 < at).length}${suffix}>`;
  };

  const ids = new Map<string, number>();
  const idOf = (uuid: string): string => {
    const key = uuid.toLowerCase();
    if (!ids.has(key)) ids.set(key, ids.size + 1);
    const n = ids.get(key)!;
    return uuid === key ? `<uuid:${n}>` : `<UUID:${n}>`;
  };

  const clearings = new Map<string, number>();
  const clearingOf = (id: string): string => {
    if (!clearings.has(id)) clearings.set(id, clearings.size + 1);
    return `<clearing:${clearings.get(id)}>`;
  };

  const mask = (text: string): string => {
    let previous: number | undefined;
    return text
      .replace(ISO, (whole: string, fraction?: string, zone?: string) => instantOf(whole, fraction, zone))
      .replace(EPOCH, (_whole: string, seconds: string) => {
        const value = Number(seconds);
        const back = previous !== undefined && value < previous;
        previous = value;
        return `"timestamp":"<epoch${back ? ':went back' : ''}>"`;
      })
      .replace(CLEARING, clearingOf)
      .replace(UUID, idOf);
  };
  return texts.map((answer) => ({ ...answer, request: mask(answer.request), body: mask(answer.body) }));
}

/** The item with what a run draws at random blanked: what tells tied rows apart beyond their ids. */
const shapeOf = (item: unknown, issued: Issued): string =>
  replaceKnown(
    JSON.stringify(item),
    new Map([...issued.cvus, ...issued.aliases].map((value) => [value, '#'])),
  )
    .replace(UUID, '#')
    .replace(CLEARING, '#')
    .replace(ISO, '#')
    .replace(EPOCH, '"timestamp":#');

/**
 * Rows of a list ordered by (time, id) that share their time (both sides of an internal transfer, written in
 * one transaction, and their events) come in the order of their random ids. Over all the pages of one list
 * (`pages`, each an array as served), each such group is checked to be in id order (`direction`) and then put in
 * a canonical order (by what the rows say, ids and times blanked), keeping every page's length. `timeOf` gives
 * each row's stored time (exact, from the database); `issued` is blanked too. Returns the pages and a note of what was found.
 */
export function canonicalTies(
  pages: unknown[][],
  idOf: (row: unknown) => string,
  timeOf: ReadonlyMap<string, string>,
  direction: 'asc' | 'desc',
  issued: Issued,
): { pages: unknown[][]; ties: string | undefined } {
  const rows = pages.flat();
  const groups: unknown[][] = [];
  for (const row of rows) {
    const last = groups[groups.length - 1];
    if (last && timeOf.get(idOf(last[0])) === timeOf.get(idOf(row))) last.push(row);
    else groups.push([row]);
  }
  const notes: string[] = [];
  const ordered = groups.flatMap((group) => {
    if (group.length === 1) return group;
    const ids = group.map(idOf);
    const sorted = [...ids].sort();
    if (direction === 'desc') sorted.reverse();
    const inIdOrder = ids.every((id, i) => id === sorted[i]);
    const shapes = new Map(group.map((row) => [row, shapeOf(row, issued)]));
    const canonical = [...group].sort((a, b) =>
      shapes.get(a)! < shapes.get(b)! ? -1 : shapes.get(a)! > shapes.get(b)! ? 1 : 0,
    );
    const distinct = new Set(shapes.values()).size === group.length;
    notes.push(
      `${group.length} rows at one time, ${inIdOrder ? `in id order (${direction})` : 'NOT in id order'}` +
        (distinct ? '' : ', some alike'),
    );
    return canonical;
  });
  const out: unknown[][] = [];
  let at = 0;
  for (const page of pages) {
    out.push(ordered.slice(at, at + page.length));
    at += page.length;
  }
  return { pages: out, ties: notes.length ? notes.join('; ') : undefined };
}
