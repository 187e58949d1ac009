/**
 * A stored response body as the Worker holds it in its isolate cache: the
 * text served byte for byte, and the same bytes gzip-compressed, computed
 * once per cached document and kept. Large version lists (~420 KB for 1,000
 * versions × 12 platforms) compress ~100×, and serving the compressed bytes
 * costs the runtime far less than encoding the text again on every request.
 */
export class StoredDocument {
  private gzipped?: Uint8Array;

  constructor(readonly text: string) {}

  /**
   * The text, gzip-compressed: the kept bytes once one request has
   * compressed it. Never a promise shared between requests: the stream that
   * compresses belongs to the request that started it, and workerd answers
   * another request that waits on it with "your Worker's code had hung"
   * (500) — or, when the first request is cancelled, never. Requests that
   * arrive while it is being compressed compress it themselves.
   */
  async gzip(): Promise<Uint8Array> {
    if (this.gzipped) return this.gzipped;
    const compressed = new Response(new Response(this.text).body!.pipeThrough(new CompressionStream('gzip')));
    const bytes = new Uint8Array(await compressed.arrayBuffer());
    this.gzipped ??= bytes;
    return this.gzipped;
  }

  /** Bytes it may occupy in the cache: UTF-16 text plus a compressed copy no larger than the text and gzip's 18-byte frame. */
  get cacheBytes(): number {
    return this.text.length * 3 + 18;
  }
}
