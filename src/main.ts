/**
 * The API's entry point: the heap's growth is limited first, then the application loads (api.ts).
 */
import { limitHeapGrowth } from './heap-growth.js';

limitHeapGrowth();
const { runApi } = await import('./api.js');
await runApi();
