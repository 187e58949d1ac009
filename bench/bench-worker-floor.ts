import * as openpgp from 'openpgp';
import { signEnvelope } from '../src/protocol/dsse';
import { sortVersions } from '../src/protocol/version';
import { bytesStream } from '../src/bytes';
import { sha256Of } from './bench-worker-bytes';

/**
 * The bench Worker's CPU floors (bench/bench-worker.ts routes to them): storage operations alone on the raw
 * bindings (`storageOps`), and pieces of the publish commit's work alone (`pieces`), each N times per request.
 */

export interface FloorEnv {
  REGISTRY_KV: KVNamespace;
  REGISTRY_R2: R2Bucket;
}

const doc = (i: number) =>
  JSON.stringify({
    protocols: ['5.0'],
    os: 'linux',
    arch: 'amd64',
    filename: `terraform-provider-floor_1.0.${i}_linux_amd64.zip`,
    download_url: `https://registry.example.com/v1/providers/acme/floor/1.0.${i}/download/linux/amd64/archive`,
    shasums_url: `https://registry.example.com/v1/providers/acme/floor/1.0.${i}/SHA256SUMS`,
    shasums_signature_url: `https://registry.example.com/v1/providers/acme/floor/1.0.${i}/SHA256SUMS.sig`,
    shasum: 'a'.repeat(64),
    signing_keys: { gpg_public_keys: [{ key_id: '0123456789ABCDEF', ascii_armor: 'x'.repeat(120) }] },
  });

let fresh = 0;
let held: Uint8Array | undefined;
/** 1 MiB of random bytes, made on first use (no random values at global scope in Workers). */
const mib = () => (held ??= filled(1 << 20));
function filled(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(out.subarray(at, at + 65536));
  return out;
}

/** A fixed amount of pure CPU work (bench/worker-cpu.ts's calibration). */
export function spin(rounds: number): number {
  let x = 1;
  for (let i = 0; i < rounds; i++) x = (Math.imul(x, 1_103_515_245) + 12_345 + i) | 0;
  return x;
}

/** Pieces of the publish commit's own work, each alone (`npx tsx bench/storage-floor.ts --pieces`). */
export const pieces: Record<string, () => Promise<unknown>> = {
  // The held key's signature as the commit makes it (key unsealed and parsed once per isolate): openpgp.js.
  'openpgp-sign': async () =>
    openpgp.sign({ message: await openpgp.createMessage({ binary: sums }), signingKeys: (await keysOnce()).pgp, detached: true, format: 'binary' }),
  // The alternative: WebCrypto's Ed25519 over the same bytes (what a v4 signature packet built by hand would cost).
  'webcrypto-ed25519-sign': async () => crypto.subtle.sign('Ed25519', (await keysOnce()).ed, sums),
  // The publish attestation's DSSE envelope with the (cached) attestation key.
  'dsse-sign': async () => signEnvelope(statement, (await keysOnce()).ed, 'kid'),
  'json-index-1': async () => JSON.stringify(JSON.parse(index1)),
  'json-index-200': async () => JSON.stringify(JSON.parse(index200)),
  'sort-200-versions': async () => sortVersions(versions200),
  'gzip-document': async () => new Response(new Response(documentText).body!.pipeThrough(new CompressionStream('gzip'))).arrayBuffer(),
  'sha256-document': async () => crypto.subtle.digest('SHA-256', new TextEncoder().encode(documentText)),
  // 1 MiB already in memory piped into crypto.DigestStream three ways (src/bytes.ts: the commit hands bytes on as one chunk).
  'digest-response-body-1mib': async () => sha256Of(new Response(mib()).body!),
  'digest-blob-stream-1mib': async () => sha256Of(new Blob([mib()]).stream()),
  'digest-one-chunk-1mib': async () => sha256Of(bytesStream(mib())),
};

/** Storage operations on the raw bindings, each on a small JSON document (`i`: its index among the request's). */
export const storageOps: Record<string, (env: FloorEnv, i: number) => Promise<unknown>> = {
  'kv-get': (env, i) => env.REGISTRY_KV.get(`floor/${i}`, 'text'),
  'kv-put': (env, i) => env.REGISTRY_KV.put(`floor/w/${i}`, doc(i)),
  'kv-list': (env) => env.REGISTRY_KV.list({ prefix: 'floor/1', limit: 10 }),
  'r2-head': (env, i) => env.REGISTRY_R2.head(`floor/${i}`),
  'r2-get-text': async (env, i) => (await env.REGISTRY_R2.get(`floor/${i}`))?.text(),
  'r2-put': (env, i) => env.REGISTRY_R2.put(`floor/w/${i}`, doc(i), { httpMetadata: { contentType: 'application/json' } }),
  'r2-put-if-absent': (env, i) =>
    env.REGISTRY_R2.put(`floor/new/${fresh++}/${i}`, doc(i), { httpMetadata: { contentType: 'application/json' }, onlyIf: { etagDoesNotMatch: '*' } }),
  'r2-delete': (env, i) => env.REGISTRY_R2.delete(`floor/gone/${i}`),
  'r2-list': (env) => env.REGISTRY_R2.list({ prefix: 'floor/1', limit: 10 }),
  // 1 MiB of bytes held in the isolate into R2 and back (the API commit copies each held staged file so), and the
  // native SHA-256 of the same MiB beside them (what h1 costs per stored MiB).
  'r2-put-1mib': (env, i) => env.REGISTRY_R2.put(`floor/big/${i % 4}`, mib()),
  'r2-get-1mib': async (env, i) => (await env.REGISTRY_R2.get(`floor/big/${i % 4}`))?.arrayBuffer(),
  'sha256-1mib': async () => crypto.subtle.digest('SHA-256', mib()),
};

const ops: Record<string, (env: FloorEnv, i: number) => Promise<unknown>> = {
  ...storageOps,
  ...pieces,
  none: async () => undefined,
  // CPU only, no I/O: N × 100,000 rounds of integer arithmetic (calibrates the profiler: Node runs it at a known speed).
  spin: async () => spin(100_000),
};

/** Which operation stands for each kind of storage request in a mix (test/fixtures/commit-requests.ts's names). */
const MIX_OPS: Record<string, string> = {
  'kv.get': 'kv-get',
  'kv.list': 'kv-list',
  'r2.get': 'r2-get-text',
  'r2.head': 'r2-head',
  'r2.list': 'r2-list',
  'r2.put': 'r2-put',
  'kv.put': 'kv-put',
  'r2.delete': 'r2-delete',
};

/** The requests of `mix` ({kind: count}) one after another, reads on the seeded documents; of the R2 puts, the first 7 are create-only, as the commit's (lease ×2, statement, record, index, catalogue, audit). */
async function commitMix(env: FloorEnv, mix: Record<string, number>): Promise<void> {
  for (const [kind, count] of Object.entries(mix))
    for (let j = 0; j < count; j++) await ops[kind === 'r2.put' && j < 7 ? 'r2-put-if-absent' : MIX_OPS[kind]!]!(env, j % 10);
}

/**
 * The storage floor (bench/storage-floor.ts): the least Worker CPU a storage operation takes in this workerd, on
 * the raw bindings (not counted), measured the way bench/worker-cpu.ts attributes a request's CPU.
 *
 * GET /__bench/floor/op?kind=K&n=N runs N operations of kind K one after another (as the publish commit mostly
 * does), each on a small JSON document (~600 bytes, like a download document or a version record), and returns
 * how many it ran; kind=none does nothing (the request's own cost, to subtract). GET /__bench/floor/seed?n=N
 * writes the documents the reads need first.
 */
export async function storageFloor(url: URL, env: FloorEnv): Promise<Response> {
  const n = Number(url.searchParams.get('n') ?? '1');
  if (url.pathname === '/__bench/floor/seed') {
    for (let i = 0; i < n; i++) {
      await env.REGISTRY_KV.put(`floor/${i}`, doc(i));
      await env.REGISTRY_R2.put(`floor/${i}`, doc(i));
    }
    return Response.json({ seeded: n });
  }
  const op = ops[url.searchParams.get('kind') ?? ''];
  if (url.pathname !== '/__bench/floor/op' || (!op && !url.searchParams.has('mix'))) return new Response('unknown', { status: 404 });
  const mix = url.searchParams.get('mix');
  if (mix) for (let i = 0; i < n; i++) await commitMix(env, JSON.parse(mix) as Record<string, number>);
  // &parallel=1: the N operations at once (Promise.all) instead of one after another.
  else if (url.searchParams.get('parallel') === '1') await Promise.all(Array.from({ length: n }, (_, i) => op!(env, i)));
  else for (let i = 0; i < n; i++) await op!(env, i);
  return Response.json({ ran: n });
}

const sums = new TextEncoder().encode(
  ['darwin_arm64', 'linux_amd64', 'windows_amd64'].map((p) => `${'a'.repeat(64)}  terraform-provider-x_1.0.0_${p}.zip\n`).join(''),
);
// A statement the size of the commit's publish attestation (~1.5 KB of in-toto JSON: its subjects' names and digests).
const statement = new TextEncoder().encode(
  JSON.stringify({
    _type: 'https://in-toto.io/Statement/v1',
    subject: `${'terraform-provider-x_1.0.0_linux_amd64 '.repeat(4)}${'b'.repeat(256)}`,
    padding: 'p'.repeat(1000),
  }),
);
// A version entry of the provider's index (~600 bytes); the index of a provider with N versions is N of them.
const entry = (i: number) => ({
  version: `1.${Math.floor(i / 10)}.${i % 10}`,
  protocols: ['5.0'],
  platforms: ['darwin_arm64', 'linux_amd64', 'windows_amd64'].map((p) => ({ os: p.split('_')[0], arch: p.split('_')[1], shasum: 'd'.repeat(64) })),
  signingKey: { key_id: '0123456789ABCDEF', fingerprint: 'e'.repeat(40) },
  shasumsFile: { sha256: 'f'.repeat(64), size: 300 },
});
const index = (n: number) =>
  JSON.stringify({ address: { hostname: 'registry.example.com', namespace: 'acme', type: 'x' }, versions: Array.from({ length: n }, (_, i) => entry(i)) });
const index1 = index(1);
const index200 = index(200);
const versions200 = Array.from({ length: 200 }, (_, i) => entry(i).version).reverse();
const documentText = JSON.stringify({ ...entry(0), ascii_armor: 'k'.repeat(2400) });

let keys: Promise<{ pgp: openpgp.PrivateKey; ed: CryptoKey }> | null = null;
const keysOnce = () =>
  (keys ??= (async () => {
    const { privateKey } = await openpgp.generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name: 'bench' }], format: 'object' });
    const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify'])) as CryptoKeyPair;
    return { pgp: privateKey, ed: pair.privateKey };
  })());
