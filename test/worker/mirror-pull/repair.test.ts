import { env } from 'cloudflare:workers';
import { afterAll, describe, expect, it } from 'vitest';
import type { Env } from '../../../src/env';
import { forgetPullThroughMemory } from '../../../src/mirror/pull-through';
import { parsePolicy } from '../../../src/protocol/mirror-policy';
import { releaseObjectKey } from '../../../src/store/layout';
import { clearPolicy, writePolicy } from '../../../src/store/mirror/policy';
import { writeManifest, type PullManifest } from '../../../src/store/mirror/pull';
import { readVersionRecord } from '../../../src/store/providers/version-records';
import { zipStored } from '../../fixtures/archives';
import { address, atFakeTime, get, sha256HexOf } from '../helpers';

/**
 * Pull-through's repair: a pull that stored its verified archive but was
 * stopped before the commit (the version record) leaves an archive that is
 * served but not listed. The next request for it completes the commit from
 * what is stored — no upstream needed (the policy's upstream here is an
 * address nothing listens on) — and the mirror then lists it, also with the
 * upstream unreachable (said in X-Mirror-Upstream).
 */
const bindings = env as unknown as Env;
const HOST = 'repair.test';
const thing = address('acme', 'thing', HOST);
const filename = 'terraform-provider-thing_1.0.0_linux_amd64.zip';

async function hex(bytes: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

afterAll(async () => {
  await clearPolicy(bindings.REGISTRY_KV);
  forgetPullThroughMemory();
});

describe('pull-through: an archive stored but not committed', () => {
  it('is committed by the next request for it, and listed from then on with the upstream unreachable', async () => {
    await writePolicy(
      bindings.REGISTRY_KV,
      parsePolicy(
        JSON.stringify({
          providers: [{ source: `${HOST}/acme/*`, versions: '>= 1.0' }],
          hosts: { [HOST]: { 'providers.v1': 'http://127.0.0.1:9/v1/providers/' } },
        }),
        'test policy',
      ),
    );
    forgetPullThroughMemory();
    const zip = zipStored({ 'terraform-provider-thing_v1.0.0': 'an executable' });
    const shasum = await hex(zip);
    const manifest: PullManifest = {
      address: thing,
      version: '1.0.0',
      protocols: ['5.0'],
      signer: { key_id: '0123456789ABCDEF', ascii_armor: '-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n' },
      shasumsUrl: 'http://127.0.0.1:9/files/terraform-provider-thing_1.0.0_SHA256SUMS',
      sums: `${shasum}  ${filename}\n`,
      signature: btoa('signature'),
      packages: [
        {
          os: 'linux',
          arch: 'amd64',
          filename,
          upstreamFilename: filename,
          shasum,
          downloadUrl: 'http://127.0.0.1:9/files/x.zip',
          documentUrl: 'http://127.0.0.1:9/v1/x',
        },
      ],
      verifiedAt: new Date().toISOString(),
    };
    // What a pull stopped after its verified put leaves: the manifest and the archive, no record.
    await writeManifest(bindings.REGISTRY_R2, manifest);
    await bindings.REGISTRY_R2.put(releaseObjectKey(thing, '1.0.0', filename), zip, { customMetadata: { sha256: shasum } });
    const store = { kv: bindings.REGISTRY_KV, blobs: bindings.REGISTRY_R2 };
    expect(await readVersionRecord(store, thing, '1.0.0')).toBeNull();

    const served = await get(`/v1/archives/${HOST}/acme/thing/1.0.0/${filename}`);
    expect(served.status).toBe(200);
    expect(await sha256HexOf(served)).toBe(shasum);

    let record = null;
    for (let waited = 0; waited < 20_000 && !record; waited += 200) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      record = await readVersionRecord(store, thing, '1.0.0');
    }
    expect(record?.packages.map((p) => [p.filename, p.shasum])).toEqual([[filename, shasum]]);

    const index = await atFakeTime(Date.now() + 600_000, () => get(`/v1/mirror/${HOST}/acme/thing/index.json`));
    expect(index.status).toBe(200);
    expect(await index.json()).toEqual({ versions: { '1.0.0': {} } });
    expect(index.headers.get('x-mirror-upstream')).toMatch(
      /^unreachable; listing only the versions this mirror holds \(list versions http:\/\/127\.0\.0\.1:9\//,
    );
  });
});
