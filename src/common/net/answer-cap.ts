/**
 * How much of a peer's answer the service reads when it does not trust the peer (a webhook receiver, a CAMARA
 * provider): at most `maxBytes`. Past that the caller stops reading and closes the connection rather than
 * draining it, so an answer that never ends, or a small compressed one that unpacks to gigabytes, costs at most
 * `maxBytes` of memory and no more time than its first bytes took.
 */
export class AnswerCap {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;

  /** `keep`: hold the bytes read, for `text()`; otherwise they are only counted. */
  constructor(
    private readonly maxBytes: number,
    private readonly keep: boolean,
  ) {}

  /** Counts (and keeps) a chunk of the answer: false once the answer has gone past the cap. */
  take(chunk: Uint8Array): boolean {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      this.chunks.length = 0;
      return false;
    }
    if (this.keep) this.chunks.push(chunk);
    return true;
  }

  /** The kept bytes as UTF-8. */
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/**
 * A fetch answer's body as text, read as a stream: undefined once it goes past `maxBytes`, when the rest is
 * cancelled (the connection is closed, not drained).
 */
export async function readCappedText(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<string | undefined> {
  if (!body) return '';
  const cap = new AnswerCap(maxBytes, true);
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return cap.text();
    if (!cap.take(value)) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
  }
}
