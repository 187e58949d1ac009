import { build } from './build';
import { startRuntime } from './runtime';
import { cpuNanos } from './proc';

/** What a signature by a registry-held key costs the Worker, per key type (part of bench/write-floor.ts's run). */

export interface SigningFigures {
  key: string;
  /** Worker CPU of one signature (ms), as the publish commit makes it. */
  cpuMs: number;
}

/**
 * What one signature by a registry-held key costs the Worker (the publish commit's only OpenPGP work), per
 * key type, through openpgp.js as src/store/keys/held-keys.ts signs, next to WebCrypto signing the same
 * bytes: workerd's CPU of N signatures minus that of 0, over N, in a warm isolate.
 */
export async function benchSigning(work: string, log: (line: string) => void = () => {}): Promise<SigningFigures[]> {
  const openpgp = await import('openpgp');
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/bench-worker.ts') });
  const rows: SigningFigures[] = [];
  try {
    const cpuOf = async (query: string, body: string): Promise<number> => {
      let least = Infinity;
      for (let i = 0; i < 3; i++) {
        const before = cpuNanos(runtime.pid);
        const response = await fetch(`${runtime.origin}/__bench/sign?${query}`, { method: 'POST', body });
        const text = await response.text();
        if (response.status !== 200) throw new Error(`/__bench/sign?${query}: HTTP ${response.status} ${text.slice(0, 300)}`);
        least = Math.min(least, (cpuNanos(runtime.pid) - before) / 1e6);
      }
      return least;
    };
    const N = 10;
    const userIDs = [{ name: 'bench', email: 'bench@example.com' }];
    const keys = [
      ['openpgp.js, RSA-4096 (keys generate default)', (await openpgp.generateKey({ userIDs, type: 'rsa', rsaBits: 4096, format: 'armored' })).privateKey],
      ['openpgp.js, RSA-3072', (await openpgp.generateKey({ userIDs, type: 'rsa', rsaBits: 3072, format: 'armored' })).privateKey],
      [
        'openpgp.js, EdDSA ed25519Legacy (keys generate --type ecc)',
        (await openpgp.generateKey({ userIDs, type: 'ecc', curve: 'ed25519Legacy', format: 'armored' })).privateKey,
      ],
      ['openpgp.js, ECDSA P-256', (await openpgp.generateKey({ userIDs, type: 'ecc', curve: 'nistP256', format: 'armored' })).privateKey],
    ] as const;
    for (const [name, armored] of keys) {
      await cpuOf('times=1', armored); // warm: the module and the key type's code
      rows.push({ key: name, cpuMs: Math.max(0, (await cpuOf(`times=${N}`, armored)) - (await cpuOf('times=0', armored))) / N });
      log(`signing: ${name}: ${rows.at(-1)!.cpuMs.toFixed(2)} ms`);
      // What a publish commit pays with a held key of this type (held-keys.ts's signer, made once per isolate).
      await cpuOf('via=held&times=1', armored);
      const held = Math.max(0, (await cpuOf(`via=held&times=${N}`, armored)) - (await cpuOf('via=held&times=0', armored))) / N;
      rows.push({ key: `${name.replace(/^openpgp\.js, /, '')}: as a registry-held key signs (src/store/keys/held-keys.ts)`, cpuMs: held });
      log(`signing: ${rows.at(-1)!.key}: ${held.toFixed(2)} ms`);
    }
    for (const native of ['Ed25519', 'RSA'] as const) {
      await cpuOf(`native=${native}&times=1`, '');
      rows.push({
        key: `WebCrypto ${native === 'RSA' ? 'RSASSA-PKCS1-v1_5 4096' : 'Ed25519'} (signature only)`,
        cpuMs: Math.max(0, (await cpuOf(`native=${native}&times=${N}`, '')) - (await cpuOf(`native=${native}&times=0`, ''))) / N,
      });
      log(`signing: ${rows.at(-1)!.key}: ${rows.at(-1)!.cpuMs.toFixed(2)} ms`);
    }
  } finally {
    await runtime.dispose();
  }
  return rows;
}
