/**
 * A stored response body as the Worker holds it in its isolate cache: the
 * text served byte for byte, and the same bytes gzip-compressed, computed at
 * most once per cached document. Large version lists (~420 KB for 1,000
 * versions × 12 platforms) compress ~100×, and serving the compressed bytes
 * costs the runtime far less than encoding the text again on every request.
 */
export class StoredDocument {
  private gzipped?: Promise<Uint8Array>;

  constructor(readonly text: string) {}

  /** The text, gzip-compressed (memoised). */
  gzip(): Promise<Uint8Array> {
    this.gzipped ??= new Response(new Response(this.text).body!.pipeThrough(new CompressionStream('gzip')))
      .arrayBuffer()
      .then((buffer) => new Uint8Array(buffer));
    return this.gzipped;
  }

  /** Bytes it may occupy in the cache: UTF-16 text plus a compressed copy no larger than the text. */
  get cacheBytes(): number {
    return this.text.length * 3;
  }
}
