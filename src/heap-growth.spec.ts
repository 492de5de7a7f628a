import { limitHeapGrowth } from './heap-growth.js';

describe('limitHeapGrowth', () => {
  it('sets the growth from API_HEAP_GROWTH_PERCENT, 50 when unset', () => {
    expect(limitHeapGrowth({})).toBe(50);
    expect(limitHeapGrowth({ API_HEAP_GROWTH_PERCENT: '80' })).toBe(80);
  });

  it("leaves V8's factor for 0, and an invalid setting to the start's own check", () => {
    expect(limitHeapGrowth({ API_HEAP_GROWTH_PERCENT: '0' })).toBe(0);
    expect(limitHeapGrowth({ API_HEAP_GROWTH_PERCENT: 'lots' })).toBe(0);
    expect(limitHeapGrowth({ API_HEAP_GROWTH_PERCENT: '50', PORT: 'nope' })).toBe(0);
  });
});
