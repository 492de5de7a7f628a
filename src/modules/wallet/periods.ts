/** Month and year keys of the operated amounts, on the calendar of the configured time zone. */
export function periodsOf(at: Date, timeZone: string): { month: string; year: string } {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
  }).formatToParts(at);
  const year = parts.find((part) => part.type === 'year')!.value;
  const month = parts.find((part) => part.type === 'month')!.value;
  return { month: `M${year}-${month}`, year: `Y${year}` };
}
