interface Periods {
  readonly month: string;
  readonly year: string;
}

interface Zone {
  readonly format: Intl.DateTimeFormat;
  /** The last answer and the UTC second it holds for. */
  second: number;
  periods: Periods;
}

const zones = new Map<string, Zone>();

/**
 * Month and year keys of the operated amounts, on the calendar of the configured time zone. Every transfer asks
 * for the current instant, and `formatToParts` was a few percent of a transfer's CPU, so the answer is kept for
 * the rest of its UTC second: the local month can only change on a whole second, since UTC offsets and their
 * transitions are whole minutes (whole seconds for the oldest local mean times).
 */
export function periodsOf(at: Date, timeZone: string): Periods {
  const second = Math.floor(at.getTime() / 1000);
  let zone = zones.get(timeZone);
  if (zone?.second === second) return zone.periods;
  if (!zone) {
    // Built once per zone: constructing a DateTimeFormat costs more than a whole transfer's other JS work.
    const format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit' });
    zone = { format, second: Number.NaN, periods: { month: '', year: '' } };
    zones.set(timeZone, zone);
  }
  const parts = zone.format.formatToParts(at);
  const year = parts.find((part) => part.type === 'year')!.value;
  const month = parts.find((part) => part.type === 'month')!.value;
  zone.periods = Object.freeze({ month: `M${year}-${month}`, year: `Y${year}` });
  zone.second = second;
  return zone.periods;
}
