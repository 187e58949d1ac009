/**
 * Bench-only Worker (never deployed) for bench/storage-floor.ts: the least
 * Worker CPU a storage operation takes in this workerd, measured the way
 * bench/worker-cpu.ts attributes a request's CPU to the Worker isolate.
 *
 * GET /op?kind=K&n=N runs N operations of kind K one after another (as the
 * publish commit mostly does), each on a small JSON document (~600 bytes,
 * like a download document or a version record), and returns how many it
 * ran. kind=none does nothing (the request's own cost, to subtract).
 * GET /seed?n=N writes the documents the reads need first.
 */

interface FloorEnv {
  REGISTRY_KV: KVNamespace;
  REGISTRY_R2: R2Bucket;
}

let padding = '';
const doc = (i: number) =>
  JSON.stringify({
    padding,
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

const ops: Record<string, (env: FloorEnv, i: number) => Promise<unknown>> = {
  none: async () => undefined,
  'kv-get': (env, i) => env.REGISTRY_KV.get(`floor/${i}`, 'text'),
  'kv-get-miss': (env, i) => env.REGISTRY_KV.get(`floor-missing/${i}`, 'text'),
  'kv-put': (env, i) => env.REGISTRY_KV.put(`floor/w/${i}`, doc(i)),
  'kv-list': (env) => env.REGISTRY_KV.list({ prefix: 'floor/1', limit: 10 }),
  'r2-head': (env, i) => env.REGISTRY_R2.head(`floor/${i}`),
  'r2-get-miss': (env, i) => env.REGISTRY_R2.get(`floor-missing/${i}`),
  'r2-get-text': async (env, i) => (await env.REGISTRY_R2.get(`floor/${i}`))?.text(),
  'r2-put': (env, i) => env.REGISTRY_R2.put(`floor/w/${i}`, doc(i), { httpMetadata: { contentType: 'application/json' } }),
  'r2-put-if-absent': (env, i) =>
    env.REGISTRY_R2.put(`floor/new/${fresh++}/${i}`, doc(i), { httpMetadata: { contentType: 'application/json' }, onlyIf: { etagDoesNotMatch: '*' } }),
  'r2-put-if-absent-refused': (env, i) => env.REGISTRY_R2.put(`floor/${i}`, doc(i), { onlyIf: { etagDoesNotMatch: '*' } }),
  'r2-delete': (env, i) => env.REGISTRY_R2.delete(`floor/gone/${i}`),
  // 1 MiB of bytes held in the isolate into R2 and back (the API commit copies each held staged file so), and the
  // native SHA-256 of the same MiB beside them (what h1 costs per stored MiB).
  'r2-put-1mib': (env, i) => env.REGISTRY_R2.put(`floor/big/${i % 4}`, mib()),
  'r2-get-1mib': async (env, i) => (await env.REGISTRY_R2.get(`floor/big/${i % 4}`))?.arrayBuffer(),
  'sha256-1mib': async () => crypto.subtle.digest('SHA-256', mib()),
  'r2-list': (env) => env.REGISTRY_R2.list({ prefix: 'floor/1', limit: 10 }),
  // CPU only, no I/O: N × 100,000 rounds of integer arithmetic (calibrates the profiler: Node runs it at a known speed).
  spin: async () => spin(100_000),
  'json-roundtrip': async (_env, i) => JSON.stringify(JSON.parse(doc(i))),
  // The publish commit's storage requests (test/fixtures/commit-requests.ts), nothing else: ?mix=JSON {op: count}.
  'commit-mix': async () => undefined,
};

async function commitMix(env: FloorEnv, mix: Record<string, number>): Promise<void> {
  let i = 0;
  const times = (op: string, run: (j: number) => Promise<unknown>) => Array.from({ length: mix[op] ?? 0 }, () => () => run(i++));
  const steps = [
    ...times('kv.get', (j) => env.REGISTRY_KV.get(`floor/${j % 10}`, 'text')),
    ...times('kv.list', () => env.REGISTRY_KV.list({ prefix: 'floor/1', limit: 10 })),
    ...times('r2.get', async (j) => (await env.REGISTRY_R2.get(`floor/${j % 10}`))?.text()),
    ...times('r2.head', (j) => env.REGISTRY_R2.head(`floor/${j % 10}`)),
    ...times('r2.list', () => env.REGISTRY_R2.list({ prefix: 'floor/1', limit: 10 })),
    // Of the commit's R2 puts, 7 are create-only (lease ×2, statement, record, index, catalogue, audit).
    ...times('r2.put', (j) =>
      env.REGISTRY_R2.put(`floor/mix/${fresh++}/${j}`, doc(j), {
        httpMetadata: { contentType: 'application/json' },
        ...(j % 12 < 7 ? { onlyIf: { etagDoesNotMatch: '*' } } : {}),
      }),
    ),
    ...times('kv.put', (j) => env.REGISTRY_KV.put(`floor/w/${j}`, doc(j))),
    ...times('r2.delete', (j) => env.REGISTRY_R2.delete(`floor/gone/${j}`)),
  ];
  for (const step of steps) await step();
}

export default {
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get('n') ?? '1');
    if (url.pathname === '/seed') {
      for (let i = 0; i < n; i++) {
        await env.REGISTRY_KV.put(`floor/${i}`, doc(i));
        await env.REGISTRY_R2.put(`floor/${i}`, doc(i));
      }
      return Response.json({ seeded: n });
    }
    const op = ops[url.searchParams.get('kind') ?? ''];
    if (url.pathname !== '/op' || !op) return new Response('unknown', { status: 404 });
    // &pad=N: documents N bytes larger (the commit's are 1–4 KB: the armored key, the record, the index).
    padding = 'p'.repeat(Number(url.searchParams.get('pad') ?? '0'));
    const mix = url.searchParams.get('mix');
    if (mix) for (let i = 0; i < n; i++) await commitMix(env, JSON.parse(mix) as Record<string, number>);
    // &parallel=1: the N operations at once (Promise.all) instead of one after another.
    else if (url.searchParams.get('parallel') === '1') await Promise.all(Array.from({ length: n }, (_, i) => op(env, i)));
    else for (let i = 0; i < n; i++) await op(env, i);
    return Response.json({ ran: n });
  },
} satisfies ExportedHandler<FloorEnv>;

/** wrangler.toml binds this Durable Object class; the floor never uses it. */
export class DownloadCounter {
  fetch(): Response {
    return new Response(null, { status: 404 });
  }
}
