import { env } from 'cloudflare:workers';
import * as openpgp from 'openpgp';
import { describe, expect, it } from 'vitest';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import { COMMIT_REQUESTS } from '../../fixtures/commit-requests';
import { getWith } from '../helpers';
import { bearer, buildRelease, HOST, issue, manifestOf, type Session } from './api';

// What a keyless API commit costs in storage requests (the Worker CPU of a small publish is mostly these, see
// bench/README.md "A small API publish, per request"), counted on the real bindings: the figure the bench
// multiplies by the storage floor, kept from growing back.

const SECRET = 'publish-api-test-secret-0123456789abcdef';
const requests: string[] = [];
function counted<T extends object>(binding: T, prefix: string): T {
  return new Proxy(binding, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        requests.push(`${prefix}.${String(property)}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
const byOperation = (list: readonly string[]) => {
  const out: Record<string, number> = {};
  for (const op of list) out[op] = (out[op] ?? 0) + 1;
  return out;
};

describe('a keyless API commit', { timeout: 60_000 }, () => {
  it('makes the storage requests COMMIT_REQUESTS lists, the staged files read once each', async () => {
    const { privateKey, publicKey } = await openpgp.generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name: 'held' }], format: 'armored' });
    const keyId = (await openpgp.readKey({ armoredKey: publicKey })).getKeyID().toHex().toUpperCase();
    await writeSigningKeys(env.REGISTRY_KV, HOST, 'costheld', [{ key_id: keyId, ascii_armor: publicKey }]);
    await storeHeldKey(env.REGISTRY_KV, SECRET, HOST, 'costheld', keyId, privateKey);
    const { token } = await issue('publish', ['costheld']);
    const waits: Promise<unknown>[] = [];
    const ctx = { waitUntil: (p: Promise<unknown>) => waits.push(p), passThroughOnException() {}, props: {} };
    const overrides = { SIGNING_KEY_SECRET: SECRET, REGISTRY_KV: counted(env.REGISTRY_KV, 'kv'), REGISTRY_R2: counted(env.REGISTRY_R2, 'r2') };
    const fetchWith = (path: string, init?: RequestInit) => getWith(overrides as never, path, init, ctx as never);
    // The second version is the one counted: the provider's index and the catalogue exist, as for any later publish.
    for (const version of ['1.0.0', '1.0.1']) {
      const release = await buildRelease('costly', version, { unsigned: true });
      const started = await fetchWith(`/v1/publish/providers/costheld/costly/${version}`, {
        method: 'POST',
        headers: bearer(token),
        body: JSON.stringify(await manifestOf(release)),
      });
      const session = (await started.json()) as Session;
      for (const file of session.files) {
        const bytes = release.files.get(file.filename)!;
        await fetchWith(file.url, { method: 'PUT', headers: bearer(token, { 'content-length': String(bytes.byteLength) }), body: bytes });
      }
      await Promise.all(waits.splice(0));
      requests.length = 0;
      const committed = await fetchWith(session.commit_url, { method: 'POST', headers: bearer(token) });
      expect(committed.status, await committed.clone().text()).toBe(200);
      await Promise.all(waits.splice(0));
      if (version === '1.0.1') expect(byOperation(requests)).toEqual(COMMIT_REQUESTS);
    }
  });
});
