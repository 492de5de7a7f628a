import { AnswerCap, readCappedText } from './answer-cap.js';

/** A stream of `chunks`, then more of `endless` for as long as it is read; says whether it was cancelled. */
function answer(chunks: string[], endless?: string) {
  const state = { cancelled: false, pulls: 0 };
  const queue = [...chunks];
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      state.pulls++;
      const next = queue.shift() ?? endless;
      if (next === undefined) controller.close();
      else controller.enqueue(new TextEncoder().encode(next));
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

describe('AnswerCap', () => {
  it('takes chunks up to the cap, exactly, and refuses the one that goes past it', () => {
    const cap = new AnswerCap(10, true);
    expect(cap.take(Buffer.from('12345'))).toBe(true);
    expect(cap.take(Buffer.from('67890'))).toBe(true);
    expect(cap.text()).toBe('1234567890');
    expect(cap.take(Buffer.from('x'))).toBe(false);
    expect(cap.text()).toBe('');
  });

  it('only counts when it does not keep', () => {
    const cap = new AnswerCap(4, false);
    expect(cap.take(Buffer.from('abcd'))).toBe(true);
    expect(cap.text()).toBe('');
    expect(cap.take(Buffer.from('e'))).toBe(false);
  });
});

describe('readCappedText', () => {
  it('reads a whole answer within the cap, in UTF-8 across chunk boundaries', async () => {
    const bytes = Buffer.from('{"a":"ñ"}');
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        // The two bytes of ñ in separate chunks.
        controller.enqueue(bytes.subarray(0, 7));
        controller.enqueue(bytes.subarray(7));
        controller.close();
      },
    });
    expect(await readCappedText(stream, 64)).toBe('{"a":"ñ"}');
    expect(await readCappedText(null, 64)).toBe('');
  });

  it('stops at the cap and cancels an answer that never ends', async () => {
    const { stream, state } = answer([], 'x'.repeat(1000));
    expect(await readCappedText(stream, 64 * 1024)).toBeUndefined();
    expect(state.cancelled).toBe(true);
    expect(state.pulls).toBeLessThanOrEqual(66 + 2); // 66 chunks pass the cap; the stream may pull ahead a little
  });
});
