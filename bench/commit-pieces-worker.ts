/**
 * Bench-only Worker (never deployed) for bench/commit-pieces.ts: pieces of the publish commit's own work,
 * each alone, in the same workerd, measured the way bench/worker-cpu.ts measures a request.
 *
 * GET /piece?kind=K&n=N runs piece K N times; kind=none does nothing (the request's own cost, to subtract).
 */
import * as openpgp from 'openpgp';
import { signEnvelope } from '../src/protocol/dsse';
import { sortVersions } from '../src/protocol/version';

const sums = new TextEncoder().encode(
  ['darwin_arm64', 'linux_amd64', 'windows_amd64'].map((p) => `${'a'.repeat(64)}  terraform-provider-x_1.0.0_${p}.zip\n`).join(''),
);
// A statement about the size of the commit's publish attestation (~1.5 KB of in-toto JSON).
const statement = new TextEncoder().encode(
  JSON.stringify({
    _type: 'https://in-toto.io/Statement/v1',
    subject: ['darwin_arm64', 'linux_amd64', 'windows_amd64', 'SHA256SUMS'].map((p) => ({
      name: `terraform-provider-x_1.0.0_${p}`,
      digest: { sha256: 'b'.repeat(64) },
    })),
    predicateType: 'https://edge-registry.dev/publish/v1',
    predicate: {
      publisher: { kind: 'token', tokenId: 'c'.repeat(32) },
      registry: 'registry.example.com',
      at: new Date(0).toISOString(),
      padding: 'p'.repeat(600),
    },
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

const pieces: Record<string, () => Promise<unknown>> = {
  none: async () => undefined,
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
};

export const PIECES = Object.keys(pieces).filter((k) => k !== 'none');

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const piece = pieces[url.searchParams.get('kind') ?? ''];
    if (url.pathname !== '/piece' || !piece) return new Response('unknown', { status: 404 });
    const n = Number(url.searchParams.get('n') ?? '1');
    for (let i = 0; i < n; i++) await piece();
    return Response.json({ ran: n });
  },
} satisfies ExportedHandler;

/** wrangler.toml binds this Durable Object class; the bench never uses it. */
export class DownloadCounter {
  fetch(): Response {
    return new Response(null, { status: 404 });
  }
}
