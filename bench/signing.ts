/**
 * What signing and verifying cost the Worker, in workerd through the bench Worker (part of `npm run bench:floor`
 * and `npm run bench`): one signature by a registry-held key per key type (`benchSigning`), and keyless CI
 * publishing's first steps in a fresh isolate (`identityRows`).
 */
import { parsePublisherInput } from '../src/access/publishers';
import { storeHeldKey } from '../src/store/keys/held-keys';
import { signingKeysKey } from '../src/store/layout';
import { generateSigningKey } from '../scripts/lib/keys/keyring';
import { githubClaims, startCiIssuers } from '../test/fixtures/ci-issuers';
import { build } from './build';
import { leastCpuMs, processCpuMs, startRuntime } from './runtime';

/** What a signature by a registry-held key costs the Worker: per key type, Worker CPU of one signature (ms). */
export interface SigningFigures {
  key: string;
  cpuMs: number;
}

/**
 * What one signature by a registry-held key costs the Worker (the publish commit's only OpenPGP work), per key
 * type, through openpgp.js with the key read each time and as src/store/keys/held-keys.ts signs (key opened once
 * per isolate), next to WebCrypto signing the same bytes: workerd's CPU of N signatures minus that of 0, over N,
 * in a warm isolate (the bench Worker's /__bench/sign); then `identityRows` (`rounds` fresh isolates).
 */
export async function benchSigning(work: string, log: (line: string) => void = () => {}, rounds = 3): Promise<SigningFigures[]> {
  const openpgp = await import('openpgp');
  const bundle = await build(work, 'bench/bench-worker.ts');
  const runtime = await startRuntime({ bundlePath: bundle });
  const rows: SigningFigures[] = [];
  const N = 10;
  /** Worker CPU of one signature with `query` (minus none), after a warm-up. */
  const each = async (query: string, body: string) => {
    const cpuOf = (times: number) => leastCpuMs(runtime, `/__bench/sign?${query}&times=${times}`, { method: 'POST', body });
    await cpuOf(1); // warm: the module and the key type's code
    return Math.max(0, (await cpuOf(N)) - (await cpuOf(0))) / N;
  };
  const push = (key: string, cpuMs: number) => (rows.push({ key, cpuMs }), log(`signing: ${key}: ${cpuMs.toFixed(2)} ms`));
  try {
    const userIDs = [{ name: 'bench', email: 'bench@example.com' }];
    const keys = [
      ['RSA-4096 (keys generate default)', { type: 'rsa', rsaBits: 4096 }],
      ['RSA-3072', { type: 'rsa', rsaBits: 3072 }],
      ['EdDSA ed25519Legacy (keys generate --type ecc)', { type: 'ecc', curve: 'ed25519Legacy' }],
      ['ECDSA P-256', { type: 'ecc', curve: 'nistP256' }],
    ] as const;
    for (const [name, options] of keys) {
      const armored = (await openpgp.generateKey({ userIDs, ...options, format: 'armored' })).privateKey;
      push(`openpgp.js, ${name}`, await each('via=read', armored));
      push(`${name}: as a registry-held key signs (src/store/keys/held-keys.ts)`, await each('via=held', armored));
    }
    for (const native of ['Ed25519', 'RSA'] as const)
      push(`WebCrypto ${native === 'RSA' ? 'RSASSA-PKCS1-v1_5 4096' : 'Ed25519'} (signature only)`, await each(`native=${native}`, ''));
  } finally {
    await runtime.dispose();
  }
  for (const row of await identityRows(bundle, rounds)) push(row.key, row.cpuMs);
  return rows;
}

const HOST = 'registry.example.com';
const SECRET = 'bench-identity-secret-0123456789abcdefghijkl';

/**
 * Keyless CI publishing's two steps in a fresh isolate of the bench Worker's `bundle`, each the mean over `rounds` fresh workerds (the bench
 * Worker's /__sign and /__verify): the first signature by a registry-held ed25519 key (as the publish API signs:
 * the sealed key opened, openpgp evaluated) and the first verification of a GitHub-shaped CI ID token (RS256, with
 * jose; discovery and the JWKS fetched from the local issuer); then a verification with the keys cached.
 */
export async function identityRows(bundle: string, rounds: number): Promise<SigningFigures[]> {
  const ci = await startCiIssuers();
  const key = await generateSigningKey({ type: 'ecc', name: 'bench ecc' });
  ci.githubJob = githubClaims('acme/terraform-provider-thing');
  const publisher = { issuer: ci.github.url, repository: 'acme/terraform-provider-thing', workflow: 'release.yml', ref: 'refs/tags/v*' };
  const publishers = [await parsePublisherInput({ ...publisher, repositoryId: '123456', ownerId: '654321', packages: ['acme/thing'] })];
  const token = await ci.github.mint({ ...githubClaims('acme/terraform-provider-thing'), aud: HOST }, { lifetimeSeconds: 3600 });
  const total = { sign: 0, verify: 0, cached: 0 };
  try {
    for (let round = 0; round < rounds; round++) {
      const runtime = await startRuntime({ bundlePath: bundle });
      try {
        const kv = await runtime.mf.getKVNamespace('REGISTRY_KV');
        await kv.put(signingKeysKey(HOST, 'ecc'), JSON.stringify([key.publicKey]));
        await storeHeldKey(kv as never, SECRET, HOST, 'ecc', key.publicKey.key_id, key.armoredPrivateKey);
        const verify = (n: number) =>
          processCpuMs(runtime, `/__verify?n=${n}`, { method: 'POST', body: token, headers: { 'x-publishers': JSON.stringify(publishers) } });
        total.sign += await processCpuMs(runtime, '/__sign?ns=ecc', { method: 'POST', headers: { 'x-secret': SECRET } });
        total.verify += await verify(1);
        if (round === rounds - 1) total.cached = (await verify(1000)) / 1000;
      } finally {
        await runtime.dispose();
      }
    }
  } finally {
    await ci.close();
  }
  return [
    { key: 'first held-key signature in an isolate (ed25519; evaluates openpgp)', cpuMs: total.sign / rounds },
    { key: 'first CI token verification in an isolate (RS256; fetches discovery + JWKS)', cpuMs: total.verify / rounds },
    { key: 'CI token verification (RS256, keys cached), each', cpuMs: total.cached },
  ];
}
