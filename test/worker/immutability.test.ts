import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { address, fakeRelease, seed } from './helpers';
import { publishVersion } from '../../src/store/providers/write';
import { readVersionRecord, sameRelease } from '../../src/store/providers/version-records';
import { committedRecordKey, releaseObjectKey } from '../../src/store/layout';
import { VersionConflictError } from '../../src/store/errors';

// Published versions are immutable, and "the same release" is decided by content: the SHA-256 and size
// of every file and the protocols. A rebuild with the same names and sizes but other bytes is refused.

describe('sameRelease', () => {
  const provider = address('acme', 'same');
  const base = fakeRelease(provider, '1.0.0').record;

  it('is true for the same record, whatever the order of its packages', () => {
    expect(sameRelease(base, structuredClone(base))).toBe(true);
    expect(sameRelease(base, { ...base, packages: [...base.packages].reverse() })).toBe(true);
  });

  it('is false when one file has other bytes of the same size', () => {
    const rebuilt = fakeRelease(provider, '1.0.0', undefined, { salt: 'rebuilt' }).record;
    expect(rebuilt.packages.map((p) => p.size)).toEqual(base.packages.map((p) => p.size));
    expect(rebuilt.packages.map((p) => p.filename)).toEqual(base.packages.map((p) => p.filename));
    expect(sameRelease(base, rebuilt)).toBe(false);
    const oneChanged = { ...base, packages: base.packages.map((p, i) => (i === 2 ? { ...p, shasum: rebuilt.packages[2]!.shasum } : p)) };
    expect(sameRelease(base, oneChanged)).toBe(false);
  });

  it('is false when one size differs, a platform is added or missing, or a file is renamed', () => {
    const [first, ...rest] = base.packages;
    expect(sameRelease(base, { ...base, packages: [{ ...first!, size: first!.size + 1 }, ...rest] })).toBe(false);
    expect(sameRelease(base, { ...base, packages: rest })).toBe(false);
    expect(sameRelease({ ...base, packages: rest }, base)).toBe(false);
    expect(sameRelease(base, { ...base, packages: [{ ...first!, filename: `${first!.filename}.old` }, ...rest] })).toBe(false);
  });

  it('is false when the protocols differ', () => {
    expect(sameRelease(base, { ...base, protocols: ['6.0'] })).toBe(false);
    expect(sameRelease(base, { ...base, protocols: ['5.0', '6.0'] })).toBe(false);
  });
});

describe('publishVersion on the real KV and R2', () => {
  it('refuses a same-size rebuild with 409, leaving the record and every stored file as published', async () => {
    const provider = address('acme', 'immutable');
    const [original] = await seed([fakeRelease(provider, '1.0.0')]);
    const recordBefore = await (await env.REGISTRY_R2.get(committedRecordKey(provider, '1.0.0')))!.text();
    const rebuilt = fakeRelease(provider, '1.0.0', undefined, { salt: 'rebuilt' });

    const attempt = publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, rebuilt.record, rebuilt.files);
    await expect(attempt).rejects.toBeInstanceOf(VersionConflictError);

    expect(await (await env.REGISTRY_R2.get(committedRecordKey(provider, '1.0.0')))!.text()).toBe(recordBefore);
    for (const [filename, bytes] of original!.bytes) {
      const object = await env.REGISTRY_R2.get(releaseObjectKey(provider, '1.0.0', filename));
      expect(new Uint8Array(await object!.arrayBuffer()), filename).toEqual(bytes);
    }
  });

  it('refuses the same bytes with other protocols', async () => {
    const provider = address('acme', 'protocols');
    await seed([fakeRelease(provider, '1.0.0')]);
    const changed = fakeRelease(provider, '1.0.0', undefined, { protocols: ['6.0'] });
    await expect(publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, changed.record, changed.files)).rejects.toBeInstanceOf(VersionConflictError);
    expect((await readVersionRecord({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, provider, '1.0.0'))!.protocols).toEqual(['5.0']);
  });

  it('accepts an identical re-run as unchanged', async () => {
    const provider = address('acme', 'rerun');
    await seed([fakeRelease(provider, '1.0.0')]);
    const again = fakeRelease(provider, '1.0.0');
    expect(await publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, again.record, again.files)).toBe('unchanged');
  });

  it('replaces a leftover R2 object of the right size but other bytes (an earlier publish that stopped halfway)', async () => {
    const provider = address('acme', 'leftover');
    const release = fakeRelease(provider, '1.0.0', ['linux_amd64']);
    const filename = 'terraform-provider-leftover_1.0.0_linux_amd64.zip';
    const stale = fakeRelease(provider, '1.0.0', ['linux_amd64'], { salt: 'stale' }).bytes.get(filename)!;
    expect(stale.byteLength).toBe(release.bytes.get(filename)!.byteLength);
    await env.REGISTRY_R2.put(releaseObjectKey(provider, '1.0.0', filename), stale, { customMetadata: { sha256: 'f'.repeat(64) } });
    await publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, release.record, release.files);
    const stored = await env.REGISTRY_R2.get(releaseObjectKey(provider, '1.0.0', filename));
    expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(release.bytes.get(filename));
  });
});
