import { beforeAll, describe, expect, it } from 'vitest';
import { publishVersion } from '../../src/store/providers/write';
import type { Attester } from '../../src/store/provenance';
import type { BlobStore, KvStore } from '../../src/store/store';
import { signRelease } from '../fixtures/release';
import { address, bearer, env, fakeRelease, get, issueToken } from './helpers';

// Private mode (ACCESS=private): the statement routes take a read token for the namespace, like the documents;
// the attestation keys (public) do not.

const acme = address('acme', 'thing');
const ENVELOPE = JSON.stringify({ payloadType: 'application/vnd.in-toto+json', payload: btoa('{}'), signatures: [{ keyid: 'k', sig: 'AA==' }] });

beforeAll(async () => {
  const release = fakeRelease(acme, '1.0.0', ['linux_amd64']);
  await signRelease(release);
  // A statement as a publish stores it (this project has no SIGNING_KEY_SECRET: the envelope is given).
  const attest: Attester = { kind: 'publish', sign: async () => ({ kind: 'publish', envelope: new TextEncoder().encode(ENVELOPE) }) };
  await publishVersion({ kv: env.REGISTRY_KV as unknown as KvStore, blobs: env.REGISTRY_R2 as unknown as BlobStore }, release.record, release.files, () => {}, {
    attest,
  });
});

describe('provenance routes in private mode', () => {
  const path = '/v1/provenance/providers/acme/thing/1.0.0';

  it('a statement needs a read token of its namespace: none 401, another namespace 403, acme 200', async () => {
    const none = await get(path);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer realm="edge-registry"/);
    const other = await issueToken(['other']);
    expect((await get(path, bearer(other.token))).status).toBe(403);
    const own = await issueToken(['acme']);
    const ok = await get(path, bearer(own.token));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('private, no-store');
    expect(await ok.text()).toBe(ENVELOPE);
    expect((await get('/v1/provenance/modules/acme/vpc/aws/1.0.0')).status).toBe(401);
  });

  it('the attestation keys stay public (they are public keys)', async () => {
    const keys = await get('/v1/provenance/keys');
    expect(keys.status).toBe(200);
    expect(await keys.json()).toEqual({ keys: [] });
  });
});
