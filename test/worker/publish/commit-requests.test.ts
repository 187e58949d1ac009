import { env } from 'cloudflare:workers';
import * as openpgp from 'openpgp';
import { describe, expect, it } from 'vitest';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import { COMMIT_REQUESTS } from '../../fixtures/commit-requests';
import { getWith } from '../helpers';
import { uploadFileKey } from '../../../src/store/layout';
import { bearer, buildRelease, commit, HOST, issue, manifestOf, put, registerFixtureKey, startPublish, type Session } from './api';

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

describe('a commit reading small staged files whole', { timeout: 60_000 }, () => {
  // The PUT route has R2 check each file's SHA-256; the commit still refuses a staged object that is not the declared one
  // (replaced in R2 behind the route's back) or not of its size, with nothing published.
  it('refuses a staged file of other bytes or another size, and publishes nothing', async () => {
    await registerFixtureKey('staged');
    const { token } = await issue('publish', ['staged']);
    for (const [version, replace] of [
      ['1.0.0', (bytes: Uint8Array) => ({ bytes: bytes.map((b, i) => (i === 0 ? b ^ 1 : b)), sha256: 'f'.repeat(64) })],
      ['1.0.1', (bytes: Uint8Array) => ({ bytes: bytes.subarray(1), sha256: undefined })],
    ] as const) {
      const release = await buildRelease('staged', version);
      const session = (await (await startPublish(token, 'staged', release, await manifestOf(release))).json()) as Session;
      for (const file of session.files) expect((await put(token, file.url, release.files.get(file.filename)!)).status).toBe(200);
      const zip = session.files.find((f) => f.filename.endsWith('linux_amd64.zip'))!;
      const key = uploadFileKey(session.upload, zip.filename);
      const stored = await env.REGISTRY_R2.head(key);
      const other = replace(release.files.get(zip.filename)!);
      await env.REGISTRY_R2.put(key, other.bytes, { customMetadata: { sha256: other.sha256 ?? stored!.customMetadata!.sha256! } });
      const committed = await commit(token, session);
      expect(committed.status).toBe(400);
      expect(((await committed.json()) as { errors: string[] }).errors.join(' ')).toMatch(
        other.sha256 ? /the staged file is not the one declared/ : /bytes were uploaded, the manifest declares/,
      );
      expect(await env.REGISTRY_KV.get(`v1/providers/${HOST}/staged/staged/versions`)).toBeNull();
    }
  });
});
