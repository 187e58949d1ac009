import { describe, expect, it } from 'vitest';
import { versionsDocument } from '../../src/store/providers/documents';
import { address, fakeRelease, get, seed } from './helpers';

// Version lists are in semver order, which differs from the stored records' key (string) order.

const SEMVER_ORDER = ['1.2.0', '1.9.0', '1.10.0-beta.1', '1.10.0', '2.0.0', '10.0.0'];

describe('version lists', () => {
  it('are in semver order, not in the string order of their records', async () => {
    const provider = address('acme', 'ordered');
    expect([...SEMVER_ORDER].sort()).not.toEqual(SEMVER_ORDER);
    await seed(['10.0.0', '1.10.0', '2.0.0', '1.9.0', '1.10.0-beta.1', '1.2.0'].map((v) => fakeRelease(provider, v, ['linux_amd64'])));
    const list = await (await get('/v1/providers/acme/ordered/versions')).json<{ versions: { version: string }[] }>();
    expect(list.versions.map((v) => v.version)).toEqual(SEMVER_ORDER);
    const mirror = await (await get('/v1/mirror/registry.example.com/acme/ordered/index.json')).text();
    expect(Object.keys(JSON.parse(mirror).versions)).toEqual(SEMVER_ORDER);
  });

  it('versionsDocument sorts whatever order its records come in (its contract: ascending)', () => {
    const provider = address('acme', 'unsorted');
    const records = ['10.0.0', '1.10.0', '2.0.0', '1.9.0', '1.10.0-beta.1', '1.2.0'].map((v) => fakeRelease(provider, v, ['linux_amd64']).record);
    const body = JSON.parse(versionsDocument(records)) as { versions: { version: string }[] };
    expect(body.versions.map((v) => v.version)).toEqual(SEMVER_ORDER);
  });
});
