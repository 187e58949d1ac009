import { UpstreamError } from '../upstream-http';
import { concatBytes } from '../../bytes';

/**
 * Reads an upstream package body whole, bounded: more than `limit` bytes
 * (declared in Content-Length, or counted while reading when there is none)
 * or `idleMs` without a chunk stops the read and throws UpstreamError (502;
 * 504 for the stall), naming `url`. Module packages are small (kilobytes to
 * a few MB), so holding one in memory is the simple, safe choice.
 */
export async function readArchive(response: Response, limit: number, idleMs: number, url: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > limit) {
    await response.body?.cancel();
    throw new UpstreamError(`${url}: the package is ${declared} bytes, over the module proxy's ${limit}-byte limit`);
  }
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<'stalled'>((resolve) => {
      timer = setTimeout(() => resolve('stalled'), idleMs);
    });
    const next = await Promise.race([reader.read(), stalled]).finally(() => clearTimeout(timer));
    if (next === 'stalled') {
      await reader.cancel().catch(() => {});
      throw new UpstreamError(`${url}: no data for ${idleMs / 1000} s after ${total} bytes; gave up`, 504);
    }
    if (next.done) break;
    total += next.value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new UpstreamError(`${url}: the package is over the module proxy's ${limit}-byte limit`);
    }
    chunks.push(next.value);
  }
  return concatBytes(chunks, total);
}
