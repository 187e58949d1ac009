import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { releaseObjectKey, uploadPrefix } from '../../../src/store/layout';
import { get } from '../helpers';
import { buildRelease, commit, HOST, issue, manifestOf, put, registerFixtureKey, startPublish, type BuiltRelease, type Session } from './api';

// A provider manifest may carry the bytes of its small files (SHA256SUMS, its .sig, goreleaser's manifest) as
// "content" (base64): the session then lists only the archives to upload and the commit takes those bytes from
// the session. Every bad "content" is refused at the start, naming the entry and the fix, with nothing stored.

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const isArchive = (filename: string) => filename.endsWith('.zip');

/** The manifest with `content` on every file that is not an archive (what the CLI sends). */
async function manifestWithContent(release: BuiltRelease) {
  const manifest = await manifestOf(release);
  return {
    ...manifest,
    files: manifest.files.map((f) => (isArchive(f.filename) ? f : { ...f, content: base64(release.files.get(f.filename)!) })),
  };
}

const stagedKeys = async (upload: string) => (await env.REGISTRY_R2.list({ prefix: uploadPrefix(upload) })).objects.map((o) => o.key);

let token: string;
beforeAll(async () => {
  await registerFixtureKey('inline');
  ({ token } = await issue('publish', ['inline'], { name: 'inline' }));
});

describe('small release files sent with the manifest', { timeout: 60_000 }, () => {
  it('the session lists only the archives; the commit publishes SHA256SUMS and its signature byte for byte from the manifest', async () => {
    const release = await buildRelease('carried', '1.0.0', { manifest: '{"version": 1, "metadata": {"protocol_versions": ["6.0"]}}\n' });
    const started = await startPublish(token, 'inline', release, await manifestWithContent(release));
    expect(started.status, await started.clone().text()).toBe(201);
    const session = (await started.json()) as Session & { with_manifest?: string[] };
    expect(session.files.map((f) => f.filename).sort()).toEqual([...release.files.keys()].filter(isArchive).sort());
    expect(session.with_manifest?.sort()).toEqual([...release.files.keys()].filter((f) => !isArchive(f)).sort());
    for (const file of session.files) expect((await put(token, file.url, release.files.get(file.filename)!)).status).toBe(200);
    // Only the archives were staged.
    expect((await stagedKeys(session.upload)).filter((k) => k.includes('/files/')).length).toBe(3);

    const committed = await commit(token, session);
    expect(committed.status, await committed.clone().text()).toBe(200);
    expect(await committed.json()).toMatchObject({ status: 'published', protocols: ['6.0'] });
    const doc = (await (await get('/v1/providers/inline/carried/1.0.0/download/linux/amd64')).json()) as {
      shasums_url: string;
      shasums_signature_url: string;
    };
    expect(new Uint8Array(await (await get(doc.shasums_url)).arrayBuffer())).toEqual(release.files.get('terraform-provider-carried_1.0.0_SHA256SUMS'));
    expect(new Uint8Array(await (await get(doc.shasums_signature_url)).arrayBuffer())).toEqual(
      release.files.get('terraform-provider-carried_1.0.0_SHA256SUMS.sig'),
    );

    // An identical re-run, carried the same way, is unchanged.
    const again = await startPublish(token, 'inline', release, await manifestWithContent(release));
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ status: 'unchanged' });
  });

  it('a PUT of a file the manifest carried is refused (400) naming the fix', async () => {
    const release = await buildRelease('carried', '1.1.0');
    const session = (await (await startPublish(token, 'inline', release, await manifestWithContent(release))).json()) as Session;
    const sums = 'terraform-provider-carried_1.1.0_SHA256SUMS';
    const refused = await put(token, `/v1/publish/uploads/${session.upload}/${sums}`, release.files.get(sums)!);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { errors: string[] }).errors[0]).toContain('needs no upload');
    expect(await stagedKeys(session.upload)).not.toContainEqual(expect.stringContaining(sums));
  });

  describe('a bad "content" is refused at the start (400), naming the entry and the fix, with no session stored', () => {
    const cases: [string, (files: { filename: string; size: number; sha256: string; content?: string }[]) => void, RegExp][] = [
      [
        'bytes other than the declared SHA-256',
        (files) => {
          const sums = files.find((f) => f.filename.endsWith('_SHA256SUMS'))!;
          const bytes = Uint8Array.from(atob(sums.content!), (c) => c.charCodeAt(0));
          bytes[0] = bytes[0]! ^ 1;
          sums.content = base64(bytes);
        },
        /the "content" of terraform-provider-carried_1\.2\.0_SHA256SUMS is not the file declared.*send the file's own bytes/,
      ],
      [
        'fewer bytes than declared',
        (files) => {
          const sums = files.find((f) => f.filename.endsWith('_SHA256SUMS'))!;
          sums.content = base64(Uint8Array.from(atob(sums.content!), (c) => c.charCodeAt(0)).subarray(1));
        },
        /is not the file declared \(its size/,
      ],
      [
        'not base64',
        (files) => void (files.find((f) => f.filename.endsWith('.sig'))!.content = 'not base64!'),
        /files\[\d\]\.content must be the file's bytes in base64/,
      ],
      [
        'not a string',
        (files) => void ((files.find((f) => f.filename.endsWith('.sig')) as Record<string, unknown>).content = 42),
        /content must be the file's bytes in base64/,
      ],
      [
        'an archive',
        (files) => void (files.find((f) => f.filename.endsWith('.zip'))!.content = 'AAAA'),
        /is an archive; upload it \(PUT\) instead of sending its "content"/,
      ],
    ];
    for (const [what, spoil, message] of cases) {
      it(what, async () => {
        const release = await buildRelease('carried', '1.2.0');
        const manifest = await manifestWithContent(release);
        spoil(manifest.files);
        const before = (await env.REGISTRY_R2.list({ prefix: '.uploads/' })).objects.length;
        const refused = await startPublish(token, 'inline', release, manifest);
        const body = (await refused.json()) as { errors: string[] };
        expect(refused.status, JSON.stringify(body)).toBe(400);
        expect(body.errors.join('; ')).toMatch(message);
        expect((await env.REGISTRY_R2.list({ prefix: '.uploads/' })).objects.length).toBe(before);
      });
    }
  });

  it('a re-run restoring a lost SHA256SUMS asks for its upload even when the manifest carries it', async () => {
    const release = await buildRelease('carried', '1.3.0');
    const started = await startPublish(token, 'inline', release, await manifestWithContent(release));
    const session = (await started.json()) as Session;
    for (const file of session.files) await put(token, file.url, release.files.get(file.filename)!);
    expect((await commit(token, session)).status).toBe(200);
    await env.REGISTRY_R2.delete(
      releaseObjectKey({ hostname: HOST, namespace: 'inline', type: 'carried' }, '1.3.0', 'terraform-provider-carried_1.3.0_SHA256SUMS'),
    );

    const rerun = await startPublish(token, 'inline', release, await manifestWithContent(release));
    expect(rerun.status, await rerun.clone().text()).toBe(201);
    const repair = (await rerun.json()) as Session & { with_manifest?: string[] };
    expect(repair.files.map((f) => f.filename)).toEqual(['terraform-provider-carried_1.3.0_SHA256SUMS']);
    expect(repair.with_manifest).toBeUndefined();
    for (const file of repair.files) expect((await put(token, file.url, release.files.get(file.filename)!)).status).toBe(200);
    const committed = await commit(token, repair);
    expect(await committed.json()).toMatchObject({ status: 'repaired' });
    const doc = (await (await get('/v1/providers/inline/carried/1.3.0/download/linux/amd64')).json()) as { shasums_url: string };
    expect(new Uint8Array(await (await get(doc.shasums_url)).arrayBuffer())).toEqual(release.files.get('terraform-provider-carried_1.3.0_SHA256SUMS'));
  });
});
