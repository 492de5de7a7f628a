import { setFlagsFromString } from 'node:v8';
import { ConfigError, loadConfig } from '#config/app-config.js';

/**
 * Caps how far V8 lets the heap grow past what survived the last full collection (decision 0019), from
 * API_HEAP_GROWTH_PERCENT. V8's own factor goes up to 4x on a small heap, so a busy API process that keeps a
 * few dozen MiB alive grew far past a bare Nest app under the same load; a fixed factor costs more collections
 * and keeps it near the bare app's. 0 leaves V8's factor.
 *
 * It must run before the application's modules load (main.ts): V8 sets the next collection's limit at the end
 * of each full collection, and the start's last one comes while Nest and the modules load. Set after it, the
 * process served its first minute or two under V8's factor: 4x the 34 MiB then alive, an RSS of 236 MiB
 * against 170 (decision 0043). An invalid setting is left to the start's own check, which names it.
 */
export function limitHeapGrowth(env: NodeJS.ProcessEnv = process.env): number {
  let percent: number;
  try {
    percent = loadConfig(env).apiHeapGrowthPercent;
  } catch (error) {
    if (error instanceof ConfigError) return 0;
    throw error;
  }
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
  return percent;
}
