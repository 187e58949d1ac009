import { env } from 'cloudflare:workers';
import * as openpgp from 'openpgp';
import { beforeAll, describe, expect, it } from 'vitest';
import { providerAddress } from '../../../src/protocol/address';
import { moduleAddress } from '../../../src/protocol/modules-v1';
import { archiveFilename, shasumsFilename, shasumsSignatureFilename } from '../../../src/protocol/release-files';
import { listAuditEntries } from '../../../src/store/audit/read';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { moduleArchiveFilename, moduleObjectKey, releaseObjectKey } from '../../../src/store/layout';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { BlobStore } from '../../../src/store/store';
import { zipStored } from '../../fixtures/archives';
import { get } from '../helpers';
import {
  bearer,
  buildRelease,
  commit,
  hex,
  HOST,
  issue,
  manifestOf,
  publishModulePackage,
  publishRelease,
  put,
  registerFixtureKey,
  startPublish,
  type Session,
} from './api';

// A published version whose stored release files were lost from R2 (deleted by hand, a lost object): a re-run of the
// same publish is asked for exactly the lost files, and the commit restores them with the recorded bytes (the
// served files' SHA-256 equal the record's again). Other bytes are refused (409); a lost signature the registry
// made cannot be re-made byte for byte: 409 naming the fixes, never a 500.

let publisher: string;
beforeAll(async () => {
  await registerFixtureKey('acme');
  ({ token: publisher } = await issue('publish', ['acme', 'lostmods', 'held'], { name: 'lost-files' }));
});

const served = async (path: string) => new Uint8Array(await (await get(path)).arrayBuffer());

describe('a re-run restores release files lost from R2', { timeout: 60_000 }, () => {
  it('provider: asks for exactly the lost archive and SHA256SUMS, restores them byte for byte (served SHA-256 = record), audited as a repair; then unchanged', async () => {
    const release = await buildRelease('lost', '1.0.0');
    expect((await publishRelease(publisher, 'acme', release)).body).toMatchObject({ status: 'published' });
    const address = providerAddress(HOST, 'acme', 'lost');
    const zip = archiveFilename('lost', '1.0.0', { os: 'linux', arch: 'amd64' });
    const sums = shasumsFilename('lost', '1.0.0');
    const darwin = archiveFilename('lost', '1.0.0', { os: 'darwin', arch: 'arm64' });
    await env.REGISTRY_R2.delete(releaseObjectKey(address, '1.0.0', zip));
    await env.REGISTRY_R2.delete(releaseObjectKey(address, '1.0.0', sums));
    // Damaged in place (other bytes under the key, as a bad hand copy leaves): restored too.
    await env.REGISTRY_R2.put(releaseObjectKey(address, '1.0.0', darwin), 'garbage', {
      customMetadata: { sha256: await hex(new TextEncoder().encode('garbage')) },
    });

    // Another release for the version is still a 409, lost files or not.
    const other = await startPublish(
      publisher,
      'acme',
      await buildRelease('lost', '1.0.0', { salt: 'other' }),
      await manifestOf(await buildRelease('lost', '1.0.0', { salt: 'other' })),
    );
    expect(other.status).toBe(409);

    const started = await startPublish(publisher, 'acme', release, await manifestOf(release));
    expect(started.status, await started.clone().text()).toBe(201);
    const session = (await started.json()) as Session;
    expect(session.files.map((f) => f.filename).sort()).toEqual([darwin, zip, sums].sort());
    for (const file of session.files) expect((await put(publisher, file.url, release.files.get(file.filename)!)).status).toBe(200);
    const committed = await commit(publisher, session);
    expect(committed.status, await committed.clone().text()).toBe(200);
    expect(await committed.json()).toMatchObject({ status: 'repaired' });

    const doc = (await (await get('/v1/providers/acme/lost/1.0.0/download/linux/amd64')).json()) as {
      download_url: string;
      shasum: string;
      shasums_url: string;
    };
    expect(await hex(await served(doc.download_url))).toBe(doc.shasum);
    expect(doc.shasum).toBe(await hex(release.files.get(zip)!));
    expect(await served(doc.shasums_url)).toEqual(release.files.get(sums));
    const darwinDoc = (await (await get('/v1/providers/acme/lost/1.0.0/download/darwin/arm64')).json()) as { download_url: string; shasum: string };
    expect(await hex(await served(darwinDoc.download_url))).toBe(darwinDoc.shasum);

    const { entries } = await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace: 'acme' });
    expect(entries.some((e) => e.target === `${HOST}/acme/lost 1.0.0` && e.outcome === 'ok' && String(e.reason).startsWith('repaired: restored'))).toBe(true);

    const again = await startPublish(publisher, 'acme', release, await manifestOf(release));
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ status: 'unchanged' });
  });

  it('provider: a lost signature is restored only with its recorded bytes; a re-made one is 409 with nothing written', async () => {
    const release = await buildRelease('lostsig', '1.0.0');
    expect((await publishRelease(publisher, 'acme', release)).body).toMatchObject({ status: 'published' });
    const sig = shasumsSignatureFilename('lostsig', '1.0.0');
    const key = releaseObjectKey(providerAddress(HOST, 'acme', 'lostsig'), '1.0.0', sig);
    await env.REGISTRY_R2.delete(key);

    const manifest = await manifestOf(release);
    const resigned = { ...manifest, files: manifest.files.map((f) => (f.filename === sig ? { ...f, sha256: '0'.repeat(64) } : f)) };
    const refused = await startPublish(publisher, 'acme', release, resigned);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { errors: string[] }).errors[0]).toMatch(/a lost file is restored only with its recorded bytes/);
    expect(await env.REGISTRY_R2.head(key)).toBeNull();

    const started = await startPublish(publisher, 'acme', release, manifest);
    expect(started.status).toBe(201);
    const session = (await started.json()) as Session;
    expect(session.files.map((f) => f.filename)).toEqual([sig]);
    expect((await put(publisher, session.files[0]!.url, release.files.get(sig)!)).status).toBe(200);
    expect(await (await commit(publisher, session)).json()).toMatchObject({ status: 'repaired' });
    expect(await hex(new Uint8Array(await (await env.REGISTRY_R2.get(key))!.arrayBuffer()))).toBe(await hex(release.files.get(sig)!));
  });

  it('provider: a lost signature the registry made (keyless publish) is 409 naming the fixes, never a 500', async () => {
    // The project's secret (vitest.config.ts): the run's attestation key is sealed with it too.
    const SECRET = env.SIGNING_KEY_SECRET!;
    const fetchWith = get;
    const { privateKey, publicKey } = await openpgp.generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name: 'held' }], format: 'armored' });
    const keyId = (await openpgp.readKey({ armoredKey: publicKey })).getKeyID().toHex().toUpperCase();
    await writeSigningKeys(env.REGISTRY_KV, HOST, 'held', [{ key_id: keyId, ascii_armor: publicKey }]);
    await storeHeldKey(env.REGISTRY_KV, SECRET, HOST, 'held', keyId, privateKey);
    const release = await buildRelease('keyless', '1.0.0', { unsigned: true });
    const start = () => fetchWith('/v1/publish/providers/held/keyless/1.0.0', { method: 'POST', headers: bearer(publisher), body: JSON.stringify(manifest) });
    const manifest = await manifestOf(release);
    const first = (await (await start()).json()) as Session;
    for (const file of first.files) {
      const bytes = release.files.get(file.filename)!;
      await fetchWith(file.url, { method: 'PUT', headers: bearer(publisher, { 'content-length': String(bytes.byteLength) }), body: bytes });
    }
    expect(await (await fetchWith(first.commit_url, { method: 'POST', headers: bearer(publisher) })).json()).toMatchObject({ status: 'published' });

    const key = releaseObjectKey(providerAddress(HOST, 'held', 'keyless'), '1.0.0', shasumsSignatureFilename('keyless', '1.0.0'));
    await env.REGISTRY_R2.delete(key);
    const refused = await start();
    expect(refused.status).toBe(409);
    const message = ((await refused.json()) as { errors: string[] }).errors[0]!;
    expect(message).toMatch(/SHA256SUMS\.sig is lost/);
    expect(message).toMatch(/Restore the object from a backup/);
    expect(message).toMatch(/npm run publish-provider -- --version NEXT/);
    expect(await env.REGISTRY_R2.head(key)).toBeNull();
  });

  it('module: the lost package is asked for and restored (stored SHA-256 = record); other bytes are 409', async () => {
    const zip = zipStored({ 'main.tf': 'variable "a" {}\n' });
    expect(await publishModulePackage(publisher, 'lostmods', 'net', 'zip', zip)).toMatchObject({ status: 200, listed: true });
    const address = moduleAddress(HOST, 'lostmods', 'net', 'aws');
    const key = moduleObjectKey(address, '1.0.0', moduleArchiveFilename(address, '1.0.0', 'zip'));
    await env.REGISTRY_R2.delete(key);

    const other = zipStored({ 'main.tf': 'variable "b" {}\n' });
    const refused = await get('/v1/publish/modules/lostmods/net/aws/1.0.0', {
      method: 'POST',
      headers: bearer(publisher, { 'content-type': 'application/json' }),
      body: JSON.stringify({
        format: 'zip',
        size: other.byteLength,
        sha256: await hex(other),
        docs: { inputs: [], outputs: [], providers: [], requiredVersion: null, submodules: [] },
      }),
    });
    expect(refused.status).toBe(409);
    expect(await env.REGISTRY_R2.head(key)).toBeNull();

    // publishModulePackage expects the start to answer 201 (the lost package is asked for) and commits it.
    expect(await publishModulePackage(publisher, 'lostmods', 'net', 'zip', zip)).toMatchObject({ status: 200, listed: true });
    const stored = await env.REGISTRY_R2.get(key);
    expect(await hex(new Uint8Array(await stored!.arrayBuffer()))).toBe(await hex(zip));
    expect(stored!.customMetadata?.sha256).toBe(await hex(zip));
  });
});
