const formatters = new Map<string, Intl.DateTimeFormat>();

/** Month and year keys of the operated amounts, on the calendar of the configured time zone. */
export function periodsOf(at: Date, timeZone: string): { month: string; year: string } {
  let format = formatters.get(timeZone);
  if (!format) {
    // Built once per zone: constructing a DateTimeFormat costs more than a whole transfer's other JS work.
    format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit' });
    formatters.set(timeZone, format);
  }
  const parts = format.formatToParts(at);
  const year = parts.find((part) => part.type === 'year')!.value;
  const month = parts.find((part) => part.type === 'month')!.value;
  return { month: `M${year}-${month}`, year: `Y${year}` };
}
