// The goals of the issues, medians over runs, and the printed table. The money path's four (transfers,
// hot/uniform, latency at one connection, webhooks) are those of the money-path issue (docs/decisions/0035).

/** ratio → [direction, must, stretch, what it is]. 'min': higher is better; 'max': lower is better. */
export const GOALS = {
  transfersPerPgbench: ['min', 0.6, 0.8, 'service transfers/s ÷ pgbench tpcb scale-10 TPS (32 conn.)'],
  hotPerUniform: ['min', 0.9, 1.0, 'hot-account transfers/s ÷ uniform transfers/s'],
  hotP99PerUniformP99: ['max', 1.3, 1.1, 'hot transfer p99 ÷ uniform transfer p99'],
  balanceReadPerPing: ['min', 0.75, 0.9, 'GET balance req/s ÷ equipped ping req/s'],
  pingPerBareNest: ['min', 0.85, 0.95, 'equipped ping (/v1/health/live) ÷ bare Nest /ping req/s'],
  cpuPerTransferPerPing: ['max', 1.8, 1.4, 'API CPU µs per transfer ÷ per ping'],
  latencyC1PerPgbench: [
    'max',
    1.3,
    1.1,
    'transfer mean latency at 1 conn. ÷ pgbench s10 latency at 1 client',
  ],
  webhooksPerRawDrain: ['min', 0.35, 0.5, 'webhooks delivered/s ÷ raw BullMQ drain jobs/s (Redis)'],
  webhookLatencyPerRaw: ['max', 3, 1.5, 'commit→receiver p99 at idle ÷ raw BullMQ add→completed p99 (Redis)'],
  rssPerBareNest: ['max', 1.5, 1.3, 'API RSS after load ÷ bare Nest RSS after ping load'],
  rssGrowth: ['max', 0.05, 0.02, 'API RSS growth between two identical load rounds'],
};

/** The nearest-rank percentile `p` (0–100) of numbers sorted in ascending order. */
export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function median(values) {
  const sorted = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Median, key by key, of objects of numbers (nested objects are walked). Every key of any object counts (a wait
 * state of `dbWaits` may show in one run only); a run without it is left out of that key's median.
 */
export function medianOf(objects) {
  const out = {};
  const keys = new Set(objects.flatMap((o) => (o && typeof o === 'object' ? Object.keys(o) : [])));
  for (const key of keys) {
    const values = objects.map((o) => o?.[key]).filter((v) => v !== undefined);
    // A key every run left undefined (a part not measured) stays undefined, not an empty object.
    if (values.length === 0) continue;
    if (values.every((v) => v !== null && typeof v === 'object' && !Array.isArray(v)))
      out[key] = medianOf(values);
    else if (values.every((v) => typeof v === 'number' || v === null)) out[key] = median(values);
    else out[key] = values[0];
  }
  return out;
}

export function judge(name, value) {
  const [direction, must, stretch] = GOALS[name];
  if (typeof value !== 'number' || !Number.isFinite(value)) return { must: false, stretch: false };
  const ok = (limit) => (direction === 'min' ? value >= limit : value <= limit);
  return { must: ok(must), stretch: ok(stretch) };
}

const fmt = (value, digits = 3) =>
  typeof value === 'number' && Number.isFinite(value) ? value.toFixed(digits) : String(value ?? '—');

export function goalsTable(ratios) {
  const rows = [['ratio', 'value', 'must', 'stretch', 'meets']];
  for (const [name, [direction, must, stretch]] of Object.entries(GOALS)) {
    const verdict = judge(name, ratios[name]);
    const sign = direction === 'min' ? '≥' : '≤';
    rows.push([
      name,
      fmt(ratios[name]),
      `${sign}${must}`,
      `${sign}${stretch}`,
      verdict.stretch ? 'stretch' : verdict.must ? 'must' : 'NO',
    ]);
  }
  return table(rows);
}

export function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  return rows
    .map((row, r) => {
      const line = `| ${row.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ')} |`;
      return r === 0 ? `${line}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|` : line;
    })
    .join('\n');
}

export { fmt };
