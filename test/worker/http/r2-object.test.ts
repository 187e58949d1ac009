import { describe, expect, it } from 'vitest';
import { sliceStream } from '../../../src/http/r2-object';

// sliceStream is the fallback for a cache that answers a ranged lookup with the whole object.
function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

describe('sliceStream', () => {
  const bytes = Uint8Array.from({ length: 1000 }, (_, i) => i % 251);

  it('cuts any range out of a stream of any chunking', async () => {
    for (const chunk of [1, 7, 64, 1000]) {
      for (const [offset, length] of [
        [0, 1],
        [0, 1000],
        [5, 10],
        [63, 2],
        [990, 10],
        [999, 1],
      ] as const) {
        const out = new Uint8Array(await new Response(sliceStream(chunked(bytes, chunk), offset, length)).arrayBuffer());
        expect(out, `chunks of ${chunk}, ${offset}+${length}`).toEqual(bytes.slice(offset, offset + length));
      }
    }
  });

  it('errors rather than sending a short body when the stream ends early', async () => {
    await expect(new Response(sliceStream(chunked(bytes, 100), 990, 20)).arrayBuffer()).rejects.toThrow(/before the end of the range/);
  });
});
