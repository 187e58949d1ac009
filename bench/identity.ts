/**
 * `npx tsx bench/identity.ts` — Worker CPU of keyless CI publishing's two
 * steps, in workerd (the Worker built as wrangler builds it, bench/bench-worker.ts):
 *
 *   - signing a SHA256SUMS with a registry-held key (open the sealed key,
 *     read it with openpgp, sign): RSA-4096 (keys generate's default) and
 *     ed25519 (--type ecc); the first signature of an isolate also evaluates
 *     openpgp;
 *   - verifying a GitHub-shaped CI ID token (RS256) with jose: the first in
 *     an isolate also fetches discovery and the JWKS from the local issuer.
 *
 * CPU is workerd's own (user + system from /proc) per operation, over
 * several operations in one request. Prints a table; the README's
 * "Publishing from CI" quotes it. Loopback only.
 */
import { parsePublisherInput } from '../src/access/publishers';
import { storeHeldKey } from '../src/store/keys/held-keys';
import { signingKeysKey } from '../src/store/layout';
import { generateSigningKey } from '../scripts/lib/keys/keyring';
import { githubClaims, startCiIssuers } from '../test/fixtures/ci-issuers';
import { build } from './build';
import { cpuMicros } from './proc';
import { startRuntime } from './runtime';
import { script } from './report';

const SECRET = 'bench-identity-secret-0123456789abcdefghijkl';
const COLD_ROUNDS = 5;

async function main(work: string): Promise<void> {
  const ci = await startCiIssuers();
  const bundle = await build(work, 'bench/bench-worker.ts');
  const rows: [string, string][] = [];
  const ms = (micros: number) => `${(micros / 1000).toFixed(2)} ms`;
  const keys = await Promise.all((['rsa', 'ecc'] as const).map(async (type) => ({ type, key: await generateSigningKey({ type, name: `bench ${type}` }) })));
  ci.githubJob = githubClaims('acme/terraform-provider-thing');
  const publishers = [
    await parsePublisherInput({
      issuer: ci.github.url,
      repository: 'acme/terraform-provider-thing',
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      repositoryId: '123456',
      ownerId: '654321',
      packages: ['acme/thing'],
    }),
  ];
  const token = await ci.github.mint({ ...githubClaims('acme/terraform-provider-thing'), aud: 'registry.example.com' }, { lifetimeSeconds: 3600 });
  const cold = { sign: 0, verify: 0 };
  try {
    for (let round = 0; round < COLD_ROUNDS; round++) {
      // A fresh workerd each round: the first signature and verification of an isolate.
      const runtime = await startRuntime({ bundlePath: bundle });
      try {
        const kv = await runtime.mf.getKVNamespace('REGISTRY_KV');
        for (const { type, key } of keys) {
          await kv.put(signingKeysKey('registry.example.com', type), JSON.stringify([key.publicKey]));
          await storeHeldKey(kv as never, SECRET, 'registry.example.com', type, key.publicKey.key_id, key.armoredPrivateKey);
        }
        const measure = async (path: string, init: RequestInit): Promise<number> => {
          const before = cpuMicros(runtime.pid);
          const response = await fetch(`${runtime.origin}${path}`, init);
          if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
          await response.text();
          return cpuMicros(runtime.pid) - before;
        };
        const sign = (type: string, n: number) => measure(`/__sign?ns=${type}&n=${n}`, { method: 'POST', headers: { 'x-secret': SECRET } });
        const verify = (n: number) => measure(`/__verify?n=${n}`, { method: 'POST', body: token, headers: { 'x-publishers': JSON.stringify(publishers) } });
        cold.sign += await sign('ecc', 1);
        cold.verify += await verify(1);
        if (round === COLD_ROUNDS - 1) {
          rows.push(['first held-key signature in an isolate (ed25519; evaluates openpgp)', ms(cold.sign / COLD_ROUNDS)]);
          rows.push(["held-key signature, RSA-4096 (keys generate's default), each", ms((await sign('rsa', 40)) / 40)]);
          rows.push(['held-key signature, ed25519 (--type ecc), each', ms((await sign('ecc', 200)) / 200)]);
          rows.push(['first CI token verification in an isolate (RS256; fetches discovery + JWKS)', ms(cold.verify / COLD_ROUNDS)]);
          rows.push(['CI token verification (RS256, keys cached), each', ms((await verify(1000)) / 1000)]);
        }
      } finally {
        await runtime.dispose();
      }
    }
  } finally {
    await ci.close();
  }
  const width = Math.max(...rows.map(([name]) => name.length));
  process.stdout.write(
    `Worker CPU (workerd, this machine; /proc user+system of the workerd process)\n${rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n')}\n`,
  );
}

await script(import.meta, 'identity', main);
