import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { Env } from '../../../src/env';
import { committedRecordKey } from '../../../src/store/layout';
import { removeMirroredVersion } from '../../../src/store/mirror/remove';
import { address, atFakeTime, fakeRelease, get, seed } from '../helpers';
import { NotStoredError } from '../../../src/store/errors';

/**
 * Removing mirrored upstream versions, then what the Worker serves: the
 * mirror stays consistent (the index lists exactly what is held, a removed
 * version's documents and files are gone), our own versions are refused.
 */
const bindings = env as unknown as Env;
const kv = bindings.REGISTRY_KV;
const r2 = bindings.REGISTRY_R2;
const UPSTREAM = 'registry.terraform.io';
const later = <T>(request: () => Promise<T>) => atFakeTime(Date.now() + 60_000, request);

describe('removeMirroredVersion', () => {
  it('removes one version: the index lists the others; its VERSION.json and archives are gone; other versions still install', async () => {
    const random = address('hashicorp', 'random', UPSTREAM);
    const [, kept] = await seed([fakeRelease(random, '3.5.0', ['linux_amd64', 'darwin_arm64']), fakeRelease(random, '3.6.0', ['linux_amd64'])]);
    const removed = await removeMirroredVersion({ kv, blobs: r2 }, random, '3.5.0', bindings.REGISTRY_HOSTNAME);
    expect(removed).toMatchObject({ status: 'removed', remaining: ['3.6.0'] });
    expect(removed.files.sort()).toEqual([
      'terraform-provider-random_3.5.0_SHA256SUMS',
      'terraform-provider-random_3.5.0_SHA256SUMS.sig',
      'terraform-provider-random_3.5.0_darwin_arm64.zip',
      'terraform-provider-random_3.5.0_linux_amd64.zip',
    ]);
    const index = await later(async () => (await get(`/v1/mirror/${UPSTREAM}/hashicorp/random/index.json`)).json());
    expect(index).toEqual({ versions: { '3.6.0': {} } });
    expect((await later(() => get(`/v1/mirror/${UPSTREAM}/hashicorp/random/3.5.0.json`))).status).toBe(404);
    expect((await get(`/v1/archives/${UPSTREAM}/hashicorp/random/3.5.0/terraform-provider-random_3.5.0_linux_amd64.zip`)).status).toBe(404);
    expect((await get(`/v1/archives/${UPSTREAM}/hashicorp/random/3.6.0/${kept!.record.packages[0]!.filename}`)).status).toBe(200);
    // The mirror page no longer offers it.
    const page = await later(async () => (await get(`/mirror/${UPSTREAM}/hashicorp/random`, { headers: { accept: 'text/html' } })).text());
    expect(page).not.toContain('3.5.0');
  });

  it('removing the last version takes the provider out of the mirror and the catalogue', async () => {
    const gone = address('hashicorp', 'gone', UPSTREAM);
    await seed([fakeRelease(gone, '1.0.0', ['linux_amd64'])]);
    expect((await removeMirroredVersion({ kv, blobs: r2 }, gone, '1.0.0', bindings.REGISTRY_HOSTNAME)).remaining).toEqual([]);
    expect((await later(() => get(`/v1/mirror/${UPSTREAM}/hashicorp/gone/index.json`))).status).toBe(404);
    const home = await later(async () => (await get('/', { headers: { accept: 'text/html' } })).text());
    expect(home).not.toContain('hashicorp/gone');
  });

  it('a removal killed after its commit point is completed by running it again', async () => {
    const half = address('hashicorp', 'half', UPSTREAM);
    await seed([fakeRelease(half, '1.0.0', ['linux_amd64']), fakeRelease(half, '2.0.0', ['linux_amd64'])]);
    await r2.delete(committedRecordKey(half, '1.0.0')); // died right after step 1 (index, lists, documents, files left)
    const again = await removeMirroredVersion({ kv, blobs: r2 }, half, '1.0.0', bindings.REGISTRY_HOSTNAME);
    expect(again.status).toBe('cleaned'); // the record was gone (no KV copy is kept): what it left is removed
    expect(await later(async () => (await get(`/v1/mirror/${UPSTREAM}/hashicorp/half/index.json`)).json())).toEqual({ versions: { '2.0.0': {} } });
    const refused = removeMirroredVersion({ kv, blobs: r2 }, half, '1.0.0', bindings.REGISTRY_HOSTNAME);
    await expect(refused).rejects.toThrow(NotStoredError);
    // The message lists what the mirror does hold: the operator's next step.
    await expect(refused).rejects.toThrow('it holds 2.0.0');
  });

  it('refuses our own versions (immutable; withdraw instead) and versions it does not hold, changing nothing', async () => {
    const own = address('acme', 'keep');
    await seed([fakeRelease(own, '1.0.0', ['linux_amd64'])]);
    await expect(removeMirroredVersion({ kv, blobs: r2 }, own, '1.0.0', bindings.REGISTRY_HOSTNAME)).rejects.toThrow(
      /published here, not mirrored: published versions are never deleted .* npm run lifecycle -- withdraw acme\/keep --version 1\.0\.0/,
    );
    expect(await r2.head(committedRecordKey(own, '1.0.0'))).not.toBeNull();
    await expect(removeMirroredVersion({ kv, blobs: r2 }, address('hashicorp', 'nothing', UPSTREAM), '1.0.0', bindings.REGISTRY_HOSTNAME)).rejects.toThrow(
      NotStoredError,
    );
  });
});
