import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { listAuditEntries } from '../../../src/store/audit/read';
import type { BlobStore } from '../../../src/store/store';
import { versionsDocumentKey } from '../../../src/store/layout';
import { get } from '../helpers';
import { zipDeflated, zipStored } from '../../fixtures/archives';
import { bearer, buildRelease, commit, hex, HOST, issue, manifestOf, publishRelease, put, registerFixtureKey, startPublish, type Session } from './api';

// The provider write API inside workerd against Miniflare's KV and R2: what a publish token may do, every
// refusal (with nothing listed), immutability, races, an interrupted upload, and what the read API then serves.

let publisher: string;
let publisherId: string;
beforeAll(async () => {
  await registerFixtureKey('acme');
  ({ token: publisher, id: publisherId } = await issue('publish', ['acme'], { name: 'release' }));
});

// The stored list itself (the read route may reuse a "not found" for INDEX_CACHE_SECONDS).
const versions = async (type: string) => {
  const text = await env.REGISTRY_KV.get(versionsDocumentKey({ hostname: HOST, namespace: 'acme', type }), 'text');
  return text === null ? [] : (JSON.parse(text) as { versions: { version: string }[] }).versions.map((v) => v.version);
};

describe('publishing a provider release through the API', { timeout: 60_000 }, () => {
  it('publishes a 3-platform release: listed, downloadable byte for byte, h1 computed from the zips, audited with the token', async () => {
    const release = await buildRelease('thing', '1.0.0');
    const result = await publishRelease(publisher, 'acme', release);
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body).toMatchObject({ address: `${HOST}/acme/thing`, version: '1.0.0', status: 'published', protocols: ['6.0'] });
    expect(await versions('thing')).toEqual(['1.0.0']);

    const download = await get('/v1/providers/acme/thing/1.0.0/download/linux/amd64');
    const doc = (await download.json()) as { download_url: string; shasum: string; packages: Record<string, { hashes: string[] }> };
    const zip = release.files.get('terraform-provider-thing_1.0.0_linux_amd64.zip')!;
    expect(doc.shasum).toBe(await hex(zip));
    expect(doc.packages.linux_amd64!.hashes).toContain(release.h1.get('terraform-provider-thing_1.0.0_linux_amd64.zip'));
    const archive = await get(doc.download_url);
    expect(new Uint8Array(await archive.arrayBuffer())).toEqual(zip);

    const { entries } = await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace: 'acme' });
    expect(entries.find((e) => e.target === `${HOST}/acme/thing 1.0.0` && e.outcome === 'ok')).toMatchObject({
      action: 'provider.publish',
      actor: { kind: 'token', tokenId: publisherId, name: 'release' },
    });
    // The staging area is emptied after the commit.
    expect((await env.REGISTRY_R2.list({ prefix: `.uploads/${result.session!.upload}/` })).objects).toEqual([]);
  });

  it('a goreleaser release: SHA256SUMS lists the manifest (checksum.extra_files), sent beside it; protocols 6.0; SHA256SUMS served byte for byte, the manifest not served', async () => {
    const release = await buildRelease('goreleased', '1.0.0', { manifest: '{"version": 1, "metadata": {"protocol_versions": ["6.0"]}}\n' });
    const result = await publishRelease(publisher, 'acme', release);
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body).toMatchObject({ status: 'published', protocols: ['6.0'] });
    const doc = (await (await get('/v1/providers/acme/goreleased/1.0.0/download/linux/amd64')).json()) as { shasums_url: string; protocols: string[] };
    expect(doc.protocols).toEqual(['6.0']);
    const sums = new Uint8Array(await (await get(doc.shasums_url)).arrayBuffer());
    expect(sums).toEqual(release.files.get('terraform-provider-goreleased_1.0.0_SHA256SUMS'));
    expect(new TextDecoder().decode(sums)).toContain('  terraform-provider-goreleased_1.0.0_manifest.json\n');
    expect((await get(doc.shasums_url.replace(/_SHA256SUMS$/, '_manifest.json'))).status).toBe(404);
  });

  it('an identical re-publish is "unchanged" without uploading; other bytes for the version are 409', async () => {
    const release = await buildRelease('same', '1.0.0');
    expect((await publishRelease(publisher, 'acme', release)).body.status).toBe('published');
    const again = await startPublish(publisher, 'acme', release, await manifestOf(release));
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ status: 'unchanged', version: '1.0.0' });

    const rebuilt = await buildRelease('same', '1.0.0', { salt: 'other bytes' });
    const refused = await startPublish(publisher, 'acme', rebuilt, await manifestOf(rebuilt));
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { errors: string[] }).errors[0]).toMatch(
      /1\.0\.0 is already published with different contents .*published versions are immutable — publish a new version instead/,
    );
  });

  it('--dry-run validates and writes nothing', async () => {
    const release = await buildRelease('dry', '1.0.0');
    const before = (await env.REGISTRY_R2.list({ prefix: '.uploads/' })).objects.length;
    const response = await startPublish(publisher, 'acme', release, await manifestOf(release, { dry_run: true }));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'dry-run', version: '1.0.0' });
    expect((await env.REGISTRY_R2.list({ prefix: '.uploads/' })).objects.length).toBe(before);
    expect(await versions('dry')).toEqual([]);
  });
});

describe('credentials', { timeout: 60_000 }, () => {
  const attempt = async (headers: Record<string, string>, namespace = 'acme') => {
    const release = await buildRelease('creds', '1.0.0');
    return get(`/v1/publish/providers/${namespace}/creds/1.0.0`, { method: 'POST', headers, body: JSON.stringify(await manifestOf(release)) });
  };

  it('no credentials or a malformed one: 401 with a Bearer challenge', async () => {
    const none = await attempt({});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="edge-registry"');
    const garbage = await attempt(bearer('not-a-token'));
    expect(garbage.status).toBe(401);
    expect(garbage.headers.get('www-authenticate')).toBe('Bearer realm="edge-registry", error="invalid_token"');
    expect((await attempt({ authorization: 'Basic dXNlcjpwYXNz' })).status).toBe(401);
  });

  it('an unknown, revoked or expired token: 401; a read token or a publish token of another namespace: 403 — each audited, nothing written', async () => {
    const unknown = await attempt(bearer(`ert_${'A'.repeat(43)}`));
    expect(unknown.status).toBe(401);
    const expired = await issue('publish', ['acme'], { expires: '2020-01-01T00:00:00.000Z', name: 'old' });
    const old = await attempt(bearer(expired.token));
    expect(old.status).toBe(401);
    expect(((await old.json()) as { errors: string[] }).errors[0]).toBe('the token expired at 2020-01-01T00:00:00.000Z');

    const reader = await issue('read', ['acme', '*'], { name: 'reader' });
    const read = await attempt(bearer(reader.token));
    expect(read.status).toBe(403);
    expect(((await read.json()) as { errors: string[] }).errors[0]).toMatch(/this is a read token: it never publishes/);

    const other = await issue('publish', ['other'], { name: 'other-ns' });
    const wrongNamespace = await attempt(bearer(other.token));
    expect(wrongNamespace.status).toBe(403);
    expect(((await wrongNamespace.json()) as { errors: string[] }).errors[0]).toBe(
      'this publish token may not publish or change acme/creds; it may: NAMESPACE-WIDE other',
    );

    const { entries } = await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace: 'acme' });
    const refusals = entries.filter((e) => e.target === `${HOST}/acme/creds 1.0.0`);
    expect(refusals.map((e) => [e.outcome, e.actor.kind === 'token' ? e.actor.name : e.actor.kind])).toEqual([
      ['refused', 'old'],
      ['refused', 'reader'],
      ['refused', 'other-ns'],
    ]);
    expect(await versions('creds')).toEqual([]);
    expect((await env.REGISTRY_R2.list({ prefix: `${HOST}/acme/creds/` })).objects).toEqual([]);
  });

  it('an upload session is usable only with the credentials that started it', async () => {
    const release = await buildRelease('owned', '1.0.0');
    const started = await startPublish(publisher, 'acme', release, await manifestOf(release));
    const session = (await started.json()) as Session;
    const another = await issue('publish', ['acme'], { name: 'another' });
    const file = session.files[0]!;
    const stolen = await put(another.token, file.url, release.files.get(file.filename)!);
    expect(stolen.status).toBe(403);
    expect((await commit(another.token, session)).status).toBe(403);
  });
});

/** The offset of `name`'s central directory entry in `zip`. */
function findCentral(zip: Uint8Array, name: string): number {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const wanted = new TextEncoder().encode(name);
  for (let at = 0; at + 46 <= zip.byteLength; at++) {
    if (view.getUint32(at, true) !== 0x02014b50 || view.getUint16(at + 28, true) !== wanted.length) continue;
    if (wanted.every((b, i) => zip[at + 46 + i] === b)) return at;
  }
  throw new Error(`${name} is not in the central directory`);
}

describe('refusals, each with nothing listed', { timeout: 60_000 }, () => {
  const refusedAt = async (
    stage: 'started' | 'uploaded' | 'committed',
    type: string,
    release: Awaited<ReturnType<typeof buildRelease>>,
    message: RegExp,
    status = 400,
    extra: object = {},
  ) => {
    const result = await publishRelease(publisher, 'acme', release, extra);
    const response = result[stage];
    expect(response?.status, JSON.stringify(result.body)).toBe(status);
    expect((result.body as { errors: string[] }).errors[0]).toMatch(message);
    expect(await versions(type)).toEqual([]);
  };

  it('a version that is not strict semver, a file of another version, a platform twice, no SHA256SUMS', async () => {
    const release = await buildRelease('badver', '1.0.0');
    const response = await startPublish(publisher, 'acme', { ...release, version: 'v1.0.0' }, await manifestOf(release));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errors: string[] }).errors[0]).toMatch(/version "v1\.0\.0"/);
    const other = await startPublish(publisher, 'acme', { ...release, version: '1.0.1' }, await manifestOf(release));
    expect(((await other.json()) as { errors: string[] }).errors[0]).toMatch(/names badver 1\.0\.0, but this publish is badver 1\.0\.1/);
    const manifest = await manifestOf(release);
    const twice = await startPublish(publisher, 'acme', release, {
      ...manifest,
      files: [...manifest.files, { ...manifest.files[0]!, filename: 'terraform-provider-badver_1.0.0_LINUX_amd64.zip' }],
    });
    expect(((await twice.json()) as { errors: string[] }).errors[0]).toMatch(/platform linux_amd64 is given twice|not a valid platform|must look like os_arch/);
    const noSums = await startPublish(publisher, 'acme', release, { ...manifest, files: manifest.files.filter((f) => !f.filename.includes('SHA256SUMS')) });
    expect(((await noSums.json()) as { errors: string[] }).errors[0]).toMatch(/send exactly one terraform-provider-badver_1\.0\.0_SHA256SUMS/);
    expect(await versions('badver')).toEqual([]);
  });

  it('a zip whose contents do not match its name', async () => {
    const release = await buildRelease('wrongexe', '1.0.0', {
      executable: (p) =>
        p === 'darwin_arm64' ? 'terraform-provider-other_v1.0.0' : `terraform-provider-wrongexe_v1.0.0${p.startsWith('windows') ? '.exe' : ''}`,
    });
    await refusedAt(
      'committed',
      'wrongexe',
      release,
      /archive terraform-provider-wrongexe_1\.0\.0_darwin_arm64\.zip: expected executable terraform-provider-wrongexe_v1\.0\.0 at the top level, found terraform-provider-other_v1\.0\.0, README\.md/,
    );
  });

  it('a zip whose entry does not hold the size its headers record (stored: more or fewer bytes; deflated: inflating to more or fewer)', async () => {
    const lie = (entries: Record<string, string>, by: number) => ({ 'README.md': entries['README.md']!.length + by });
    // Stored: the README's headers claim one byte more than it holds.
    const stored = await buildRelease('badsize', '1.0.0', {
      platforms: ['linux_amd64'],
      zip: async (_, entries) => {
        const zip = zipStored(entries);
        const at = findCentral(zip, 'README.md');
        new DataView(zip.buffer, zip.byteOffset).setUint32(at + 24, entries['README.md']!.length + 1, true);
        return zip;
      },
    });
    await refusedAt(
      'committed',
      'badsize',
      stored,
      /archive terraform-provider-badsize_1\.0\.0_linux_amd64\.zip: entry "README\.md" holds \d+ bytes, its header says \d+; rebuild the zip/,
    );
    // Deflated (the executable's data is deflated too, so h1 goes through DecompressionStream): more, then fewer.
    for (const [type, by] of [
      ['inflatemore', -1],
      ['inflateless', 1],
    ] as const) {
      const release = await buildRelease(type, '1.0.0', { platforms: ['linux_amd64'], zip: (_, entries) => zipDeflated(entries, lie(entries, by)) });
      await refusedAt(
        'committed',
        type,
        release,
        new RegExp(
          `archive terraform-provider-${type}_1\\.0\\.0_linux_amd64\\.zip: entry "README\\.md" cannot be read \\(does not inflate to the \\d+ bytes its header says: .*\\); rebuild the zip`,
        ),
      );
    }
    // The same deflated zip with true sizes publishes, with the h1 of the inflated entries.
    const good = await buildRelease('inflategood', '1.0.0', { platforms: ['linux_amd64'], zip: (_, entries) => zipDeflated(entries) });
    const result = await publishRelease(publisher, 'acme', good);
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(200);
    const doc = (await (await get('/v1/providers/acme/inflategood/1.0.0/download/linux/amd64')).json()) as { packages: Record<string, { hashes: string[] }> };
    expect(doc.packages.linux_amd64!.hashes).toContain(good.h1.get('terraform-provider-inflategood_1.0.0_linux_amd64.zip'));
  });

  it('a SHA256SUMS that does not match the archives', async () => {
    const release = await buildRelease('badsums', '1.0.0', { sums: (text) => text.replace(/^[0-9a-f]{8}/, '00000000') });
    await refusedAt(
      'committed',
      'badsums',
      release,
      /_SHA256SUMS: terraform-provider-badsums_1\.0\.0_\w+\.zip is listed with SHA-256 00000000[0-9a-f]{56} but the archive .* has [0-9a-f]{64}; the archive changed after SHA256SUMS was made/,
    );
  });

  it('goreleaser\'s manifest listed in SHA256SUMS: changed after the build, not sent, protocols other than it says, sent without "protocols"', async () => {
    const manifest = '{\n  "version": 1,\n  "metadata": {\n    "protocol_versions": ["6.0"]\n  }\n}\n';
    const name = (type: string) => `terraform-provider-${type}_1.0.0_manifest.json`;
    const changed = await buildRelease('manichanged', '1.0.0', { manifest });
    changed.files.set(name('manichanged'), new TextEncoder().encode(manifest.replace('6.0', '5.0')));
    await refusedAt(
      'committed',
      'manichanged',
      changed,
      /_SHA256SUMS: terraform-provider-manichanged_1\.0\.0_manifest\.json is listed with SHA-256 [0-9a-f]{64} but terraform-provider-manichanged_1\.0\.0_manifest\.json has [0-9a-f]{64}; the manifest changed after the release was built/,
      400,
      { protocols: ['5.0'] },
    );
    const unsent = await buildRelease('maniunsent', '1.0.0', { manifest });
    unsent.files.delete(name('maniunsent'));
    await refusedAt(
      'committed',
      'maniunsent',
      unsent,
      /_SHA256SUMS: lists terraform-provider-maniunsent_1\.0\.0_manifest\.json, but no manifest was given; pass terraform-registry-manifest\.json/,
    );
    const other = await buildRelease('maniother', '1.0.0', { manifest });
    await refusedAt(
      'committed',
      'maniother',
      other,
      /"protocols" \["5\.0"\] differs from terraform-provider-maniother_1\.0\.0_manifest\.json's protocol_versions \["6\.0"\]/,
      400,
      {
        protocols: ['5.0'],
      },
    );
    const bare = await buildRelease('manibare', '1.0.0', { manifest });
    const files = (await manifestOf(bare)).files;
    const response = await startPublish(publisher, 'acme', bare, { files });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errors: string[] }).errors[0]).toMatch(
      /"protocols" must be sent with terraform-provider-manibare_1\.0\.0_manifest\.json/,
    );
  });

  it('a signature by a key the namespace does not have, and no signature at all', async () => {
    const release = await buildRelease('badsig', '1.0.0');
    const unsigned = await buildRelease('unsigned', '1.0.0', { unsigned: true });
    const refused = await startPublish(publisher, 'acme', unsigned, await manifestOf(unsigned));
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { errors: string[] }).errors[0]).toMatch(
      /no terraform-provider-unsigned_1\.0\.0_SHA256SUMS\.sig was sent and this registry holds no signing key for namespace acme/,
    );
    const other = await issue('publish', ['nokeys']);
    const noKeys = await publishRelease(other.token, 'nokeys', release);
    expect(noKeys.committed?.status).toBe(400);
    expect((noKeys.body as { errors: string[] }).errors[0]).toMatch(
      /SHA256SUMS\.sig: the signature \(by key [0-9A-F]{16}\) does not verify against the namespace's public keys \(the namespace has no signing keys\)/,
    );
  });

  it('bytes that are not the declared ones; a body longer than declared or a file over the limit: 413; no Content-Length: 411', async () => {
    const release = await buildRelease('badbytes', '1.0.0');
    const started = await startPublish(publisher, 'acme', release, await manifestOf(release));
    const session = (await started.json()) as Session;
    const file = session.files.find((f) => f.filename.endsWith('linux_amd64.zip'))!;
    const original = release.files.get(file.filename)!;
    const tampered = original.slice();
    tampered[40] = tampered[40]! ^ 1;
    const wrong = await put(publisher, file.url, tampered);
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { errors: string[] }).errors[0]).toMatch(/the uploaded bytes do not have the SHA-256 declared for it/);
    const longer = new Uint8Array(original.byteLength + 10);
    const tooLong = await put(publisher, file.url, longer);
    expect(tooLong.status).toBe(413);
    const huge = await manifestOf(release);
    huge.files[0]!.size = 3 * 1024 ** 3;
    const oversize = await startPublish(publisher, 'acme', release, huge);
    expect(oversize.status).toBe(413);
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(original);
        controller.close();
      },
    });
    const unsized = await get(file.url, { method: 'PUT', headers: bearer(publisher), body: stream, duplex: 'half' } as RequestInit);
    expect(unsized.status).toBe(411);
    expect(await versions('badbytes')).toEqual([]);
  });

  it('wrong methods: 405 with Allow; the read routes still answer only GET and HEAD', async () => {
    const get405 = await get('/v1/publish/providers/acme/thing/1.0.0');
    expect(get405.status).toBe(405);
    expect(get405.headers.get('allow')).toBe('POST');
    const session = await get('/v1/publish/uploads/0123456789abcdef0123456789abcdef/x.zip', { method: 'POST' });
    expect(session.status).toBe(405);
    expect(session.headers.get('allow')).toBe('PUT');
    const read = await get('/v1/providers/acme/thing/versions', { method: 'POST' });
    expect(read.status).toBe(405);
    expect(read.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('races and interruptions', { timeout: 60_000 }, () => {
  it('concurrent publishes of one version with different bytes: exactly one wins, the other is 409', async () => {
    const a = await buildRelease('race', '1.0.0', { salt: 'a' });
    const b = await buildRelease('race', '1.0.0', { salt: 'b' });
    const sessions: Session[] = [];
    for (const release of [a, b]) {
      const session = (await (await startPublish(publisher, 'acme', release, await manifestOf(release))).json()) as Session;
      for (const file of session.files) expect((await put(publisher, file.url, release.files.get(file.filename)!)).status).toBe(200);
      sessions.push(session);
    }
    const results = await Promise.all(sessions.map((s) => commit(publisher, s)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = results.findIndex((r) => r.status === 200);
    const served = (await (await get('/v1/providers/acme/race/1.0.0/download/linux/amd64')).json()) as { shasum: string };
    expect(served.shasum).toBe(await hex([a, b][winner]!.files.get('terraform-provider-race_1.0.0_linux_amd64.zip')!));
  });

  it('an upload abandoned halfway leaves nothing listed; publishing again completes', async () => {
    const release = await buildRelease('halfway', '1.0.0');
    const session = (await (await startPublish(publisher, 'acme', release, await manifestOf(release))).json()) as Session;
    const first = session.files[0]!;
    expect((await put(publisher, first.url, release.files.get(first.filename)!)).status).toBe(200);
    const early = await commit(publisher, session);
    expect(early.status).toBe(400);
    expect(((await early.json()) as { errors: string[] }).errors[0]).toMatch(/was not uploaded: PUT it to its url first/);
    expect(await versions('halfway')).toEqual([]);
    expect(await env.REGISTRY_KV.get('v1/providers/registry.example.com/acme/halfway/1.0.0/download/linux_amd64')).toBeNull();
    const again = await publishRelease(publisher, 'acme', release);
    expect(again.body.status).toBe('published');
    expect(await versions('halfway')).toEqual(['1.0.0']);
  });
});
