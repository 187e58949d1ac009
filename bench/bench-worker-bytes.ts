import { verifiedCopy } from '../src/mirror/verified-copy';
import { matchesSignedSums } from '../src/mirror/archive-checks';
import { checkBytes } from '../src/mirror/verify-archive';
import { UpstreamError } from '../src/mirror/upstream-http';
import { zipDigest } from '../src/mirror/zip-digest';
import { repackModule } from '../src/mirror/modules/repack';
import { proxiedModuleDocs } from '../src/mirror/modules/docs';
import { heldRangeReader, storedZip } from '../src/store/uploads/stored-zip';
import { bytesStream } from '../src/bytes';
import { detachedSigner } from '../src/store/keys/held-keys';
import { readZipDirectory, zipH1 } from '../src/protocol/zip-reader';
import { entryDataOffset, LOCAL_HEADER_BYTES } from '../src/protocol/zip';

/**
 * The bench Worker's byte paths (bench/bench-worker.ts routes /__bench/cpu?what=mem-…, /__bench/repack, /__bench/floor-repack,
 * /__bench/sign and PUT /__bench/object here), for `npm run bench:modules` and bench/write-floor.ts
 * (ours ÷ the runtime's native floor, per MiB). No storage I/O in a measured request but what it says.
 *
 * POST /__bench/repack?times=N with a GitHub tarball as the body runs the module proxy's own work on it N times
 * (unpack, checks, deterministic repack, gzip, docs, SHA-256); /__bench/floor-repack?times=N gunzips the body,
 * gzips it again and hashes it, natively (the module proxy's floor).
 *
 * PUT /__bench/object?key=K&head=H&block=B&count=N keeps an archive in the isolate, laid out as a head, a block
 * repeated N times and a tail (200 MiB fits; 64 KiB views when read, as from the network);
 * /__bench/cpu?what=mem-zh-copy&key=K&sha=HEX&sink=URL runs the pull's verified copy over it (both destinations
 * POSTed to the discard server, natively, as R2's put and a client's connection take them), mem-h1 the pull's h1,
 * mem-commit-hash the publish commit's checks of a staged zip (whole-object SHA-256, entries, h1); the floors:
 * mem-floor-zh only pipes it into crypto.DigestStream, mem-floor-h1 each entry through DecompressionStream into
 * crypto.DigestStream, mem-floor-zh-delivery tees it natively into a DigestStream and two FixedLengthStreams sent
 * to URL. Returns null for another path.
 */
export function bytePaths(request: Request, url: URL): Promise<Response> | null {
  if (url.pathname === '/__bench/cpu') return memoryCpu(url.searchParams.get('what')?.replace(/^mem-/, '') ?? '', url);
  if (url.pathname === '/__bench/repack') return repack(request, url);
  if (url.pathname === '/__bench/floor-repack') return floorRepack(request, url);
  if (url.pathname === '/__bench/sign') return sign(request, url);
  if (url.pathname === '/__bench/object' && request.method === 'PUT') {
    // The body: head, then one block, then tail; ?head= and ?block= give the first two's lengths, ?count= the block's repeats.
    return request.arrayBuffer().then((b) => {
      const all = new Uint8Array(b);
      const [head, block, count] = ['head', 'block', 'count'].map((n) => Number(url.searchParams.get(n))) as [number, number, number];
      const archive = new HeldArchive(all.subarray(0, head), all.subarray(head, head + block), count, all.subarray(head + block));
      memory.set(url.searchParams.get('key')!, archive);
      return Response.json({ size: archive.size });
    });
  }
  return null;
}

/** SHA-256 of what `stream` carries, through crypto.DigestStream, as hex. */
export async function sha256Of(stream: ReadableStream<Uint8Array>): Promise<string> {
  const digest = new crypto.DigestStream('SHA-256');
  await stream.pipeTo(digest);
  return [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// Archives held in the isolate for the floor comparison (no storage I/O in the measured requests). Each is a
// head, a middle that repeats one block `count` times, and a tail (bench/write-floor.ts lays out the zip), so
// a 200 MiB archive takes the isolate ~1 MiB; reads hand out views (no copies), at most 64 KiB at a time.
class HeldArchive {
  readonly size: number;
  private readonly twice: Uint8Array; // the block twice over: any window of up to one block is one view

  constructor(
    private readonly head: Uint8Array,
    block: Uint8Array,
    private readonly count: number,
    private readonly tail: Uint8Array,
  ) {
    this.twice = new Uint8Array(block.byteLength * 2);
    this.twice.set(block);
    this.twice.set(block, block.byteLength);
    this.size = head.byteLength + block.byteLength * count + tail.byteLength;
  }

  /** Bytes [offset, offset + length) as a stream of views of at most CHUNK bytes, as a network body arrives. */
  stream(offset = 0, length = this.size - offset): ReadableStream<Uint8Array> {
    let at = offset;
    const end = offset + length;
    return new ReadableStream<Uint8Array>({
      pull: (controller) => {
        if (at >= end) return controller.close();
        const view = this.view(at, Math.min(CHUNK, end - at));
        at += view.byteLength;
        controller.enqueue(view);
      },
    });
  }

  /** Up to `length` bytes at `at`, stopping at the next part's start. */
  private view(at: number, length: number): Uint8Array {
    const blockBytes = this.twice.byteLength / 2;
    const middleEnd = this.head.byteLength + blockBytes * this.count;
    if (at < this.head.byteLength) return this.head.subarray(at, Math.min(at + length, this.head.byteLength));
    if (at < middleEnd) {
      const inBlock = (at - this.head.byteLength) % blockBytes;
      return this.twice.subarray(inBlock, inBlock + Math.min(length, blockBytes, middleEnd - at));
    }
    return this.tail.subarray(at - middleEnd, at - middleEnd + length);
  }

  /** Bytes [offset, offset + length) copied into one array (small reads: headers, the central directory). */
  async bytes(offset: number, length: number): Promise<Uint8Array> {
    return new Uint8Array(await new Response(this.stream(offset, length)).arrayBuffer());
  }
}
const memory = new Map<string, HeldArchive>();
const memoryBucket = {
  async get(key: string, options?: { range?: { offset: number; length: number } }) {
    const held = memory.get(key);
    if (!held) return null;
    const { offset, length } = options?.range ?? { offset: 0, length: held.size };
    return {
      get body() {
        return held.stream(offset, length);
      },
      arrayBuffer: async () => (await held.bytes(offset, length)).buffer as ArrayBuffer,
    };
  },
};
const CHUNK = 64 * 1024;
// provider-commit.ts's HELD_FILE_BYTES: a staged file up to this size, sent whole, is held in memory for the commit.
const HELD_FILE_BYTES = 4 * 1024 * 1024;

/**
 * Hands `stream` to a native consumer, as R2's put and a client's connection take it in production: the
 * body of a POST to the bench's discard server on loopback (`sink`). A JS WritableStream instead would run
 * JS for every small read of a FixedLengthStream (measured: ~3 ms per MiB and destination, 4× sending it
 * to a socket), and Miniflare's R2 simulator (~12 ms/MiB) and its proxy of the response (~21 ms/MiB) are
 * simulators' costs that Cloudflare's edge does not run in the Worker's process.
 */
async function deliver(stream: ReadableStream<Uint8Array>, sink: string): Promise<void> {
  const response = await fetch(sink, { method: 'POST', body: stream });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`sink: HTTP ${response.status}`);
}

/** /__bench/cpu?what=mem-…: the held archive's paths and floors (above). */
async function memoryCpu(what: string, url: URL): Promise<Response> {
  const key = url.searchParams.get('key')!;
  const held = memory.get(key);
  if (!held) return new Response('no such object', { status: 404 });
  const sink = url.searchParams.get('sink')!;
  const body = async () => held.stream();
  if (what === 'zh-copy') {
    // The pull's verified copy, both destinations sent to sockets as R2's put and the client's response are.
    const copy = verifiedCopy(await body(), { settle: signedSums(url.searchParams.get('sha')!), size: held.size, idleMs: 60_000, what: 'bench' });
    await Promise.all([deliver(copy.client, sink), deliver(copy.store, sink), copy.done]);
    return Response.json({ ok: true });
  }
  if (what === 'h1') return Response.json(await zipDigest(memoryBucket, key, held.size));
  if (what === 'commit-hash') {
    // The commit's per-byte work. A file up to HELD_FILE_BYTES is read whole once and its entries hashed from
    // memory (provider-commit.ts: heldRangeReader); a larger one by ranged reads. The whole-object SHA-256 (what
    // staged.ts's storedSha256 does for a file sent in parts; R2 checks a file sent whole) over the same bytes.
    const bytes = held.size <= HELD_FILE_BYTES ? await held.bytes(0, held.size) : null;
    const sha256 = await sha256Of(bytes ? bytesStream(bytes) : await body());
    const zip = storedZip(bytes ? heldRangeReader(memoryBucket, new Map([[key, bytes]])) : memoryBucket, key, held.size);
    return Response.json({ sha256, h1: await zipH1(zip, await readZipDirectory(zip, key), key) });
  }
  if (what === 'floor-zh') return Response.json({ sha256: await sha256Of(await body()) });
  if (what === 'floor-h1') {
    // Only the native work: each entry (its offsets from the central directory) inflated into a DigestStream.
    const { entries } = await readZipDirectory(storedZip(memoryBucket, key, held.size), key);
    const digests: string[] = [];
    for (const entry of entries) {
      const offset = entryDataOffset(await held.bytes(entry.localHeaderOffset, LOCAL_HEADER_BYTES), entry, key);
      const source = held.stream(offset, entry.compressedSize);
      digests.push(`${await sha256Of(entry.method === 8 ? source.pipeThrough(new DecompressionStream('deflate-raw')) : source)}  ${entry.name}`);
    }
    return Response.json({ digests });
  }
  if (what === 'floor-zh-delivery') {
    // The least the runtime takes to hash the bytes and hand them to two length-fixed destinations (an R2 put
    // and a client's response need FixedLengthStreams): native tees into crypto.DigestStream and two
    // FixedLengthStreams sent to sockets. No JS per chunk, and no holding back of the last block.
    const [hashed, copies] = (await body()).tee();
    const [a, b] = copies.tee();
    const [sha256] = await Promise.all([sha256Of(hashed), ...[a, b].map((s) => deliver(s.pipeThrough(new FixedLengthStream(held.size)), sink))]);
    return Response.json({ sha256 });
  }
  return new Response(`unknown ${what}`, { status: 400 });
}

/**
 * POST /__bench/sign?times=N with an armored private key: signs a SHA256SUMS-sized document N times as
 * openpgp.js does with a key read each time; ?via=held as src/store/keys/held-keys.ts signs in a warm isolate (the
 * key read and its signer made once, then N signatures); ?native=Ed25519|RSA signs the
 * same with a WebCrypto key of that type instead (the native floor of the signature itself).
 */
const nativeKeys = new Map<string, CryptoKeyPair>();
async function sign(request: Request, url: URL): Promise<Response> {
  const armored = await request.text();
  const times = Number(url.searchParams.get('times') ?? '1');
  const sums = new TextEncoder().encode(`${'0'.repeat(64)}  terraform-provider-x_1.0.0_linux_amd64.zip\n`.repeat(3));
  const native = url.searchParams.get('native');
  if (native) {
    const algorithm =
      native === 'Ed25519'
        ? { name: 'Ed25519' }
        : { name: 'RSASSA-PKCS1-v1_5', modulusLength: 4096, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' };
    // One key pair per isolate: generating an RSA key takes a random, large time that times=0 cannot subtract.
    let keys = nativeKeys.get(native);
    if (!keys) nativeKeys.set(native, (keys = (await crypto.subtle.generateKey(algorithm, false, ['sign', 'verify'])) as CryptoKeyPair));
    for (let i = 0; i < times; i++) await crypto.subtle.sign(algorithm.name, keys.privateKey, sums);
    return Response.json({ ok: true });
  }
  const openpgp = await import('openpgp');
  let size = 0;
  if (url.searchParams.get('via') === 'held') {
    // As src/store/keys/held-keys.ts signs in a warm isolate: the key parsed and its signer made once.
    const signer = await detachedSigner(await openpgp.readPrivateKey({ armoredKey: armored }));
    for (let i = 0; i < times; i++) size = (await signer(sums)).byteLength;
    return Response.json({ size });
  }
  for (let i = 0; i < times; i++) {
    const privateKey = await openpgp.readPrivateKey({ armoredKey: armored });
    const message = await openpgp.createMessage({ binary: sums });
    size = (await openpgp.sign({ message, signingKeys: privateKey, detached: true, format: 'binary' })).byteLength;
  }
  return Response.json({ size });
}

async function floorRepack(request: Request, url: URL): Promise<Response> {
  const bytes = new Uint8Array(await request.arrayBuffer());
  const times = Number(url.searchParams.get('times') ?? '1');
  for (let i = 0; i < times; i++)
    await sha256Of(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip')).pipeThrough(new CompressionStream('gzip')));
  return Response.json({ size: bytes.byteLength });
}

async function repack(request: Request, url: URL): Promise<Response> {
  const bytes = new Uint8Array(await request.arrayBuffer());
  const times = Number(url.searchParams.get('times') ?? '1');
  let size = 0;
  for (let i = 0; i < times; i++) {
    const repacked = await repackModule(bytes, 'tar.gz', { stripTop: true, subdir: '', label: 'bench', maxUnpackedBytes: 64 * 1024 * 1024 });
    proxiedModuleDocs(repacked.texts);
    await crypto.subtle.digest('SHA-256', repacked.bytes);
    size = repacked.bytes.length;
  }
  return Response.json({ size });
}

/** The pull's check of the copied bytes against the signed SHA256SUMS line, as src/routes/mirror-pull/archive.ts runs it. */
function signedSums(sha256Hex: string): (digest: { sha256Hex: string; size: number }) => void {
  return checkBytes([matchesSignedSums(sha256Hex, 'bench')], (message) => new UpstreamError(message));
}
