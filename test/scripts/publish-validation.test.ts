import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as openpgp from 'openpgp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig, type RegistryConfig } from '../../scripts/lib/config';
import { addNamespaceKey } from '../../scripts/lib/keys/namespace-keys';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { type StoreHandle } from '../../scripts/lib/stores/handle';
import { publishRelease, type PublishOptions } from '../../scripts/lib/provider/publish';
import { signDetached } from '../../scripts/lib/provider/sign';
import { zipBuffers } from '../../scripts/lib/provider/zip-binary';
import { InputError } from '../../src/protocol/errors';
import { formatShasums } from '../../src/protocol/hashes';
import { releaseObjectKey } from '../../src/store/layout';
import { configPath, runScript, tempDir, writeDist, writeKeyFile } from './helpers';
import { listTokens } from '../../scripts/lib/tokens';
import { writeGoreleaserRelease } from '../fixtures/goreleaser';

/**
 * Every validation failure of publish-provider: an InputError naming the
 * file and the fix, and nothing written (same KV keys and values, no R2
 * object of the release). Run in-process through publishRelease on a temp
 * local state; the CLI's exit codes are checked at the end.
 */

const { dir, cleanup } = tempDir('validation');
const state = join(dir, 'state');
let config: RegistryConfig;
let store: StoreHandle;
let key: { path: string; keyId: string; publicArmor: string };
let stranger: { path: string; keyId: string };
let counter = 0;

beforeAll(async () => {
  config = await readRegistryConfig({ configPath, persistTo: state });
  store = await openLocalStore(config, { registry: {} });
  key = await writeKeyFile(dir, 'signer.asc');
  stranger = await writeKeyFile(dir, 'stranger.asc');
  await addNamespaceKey(store.kv, config.hostname, 'acme', { key_id: key.keyId, ascii_armor: key.publicArmor });
});
afterAll(async () => {
  await store?.close();
  cleanup();
});

/** A fresh dist/ directory with a valid release of acme/x 1.0.0 (linux_amd64, windows_amd64). */
async function dist(options: Parameters<typeof writeDist>[3] = {}): Promise<string> {
  return writeDist(join(dir, `dist-${++counter}`), 'x', '1.0.0', { platforms: ['linux_amd64', 'windows_amd64'], ...options });
}

async function snapshot(): Promise<string> {
  const page = await store.kv.list({ prefix: '' });
  const values = await Promise.all(page.keys.map(async (k) => [k.name, await store.kv.get(k.name, 'text')]));
  return JSON.stringify(values);
}

/** Expects publishRelease to fail with an InputError matching `message`, writing nothing. */
async function refused(options: Partial<PublishOptions>, message: RegExp): Promise<void> {
  const before = await snapshot();
  const attempt = publishRelease({ namespace: 'acme', config, store, keyFile: key.path, keysDir: join(dir, 'keys'), ...options });
  await expect(attempt).rejects.toBeInstanceOf(InputError);
  await expect(attempt).rejects.toThrow(message);
  expect(await snapshot()).toBe(before);
  const address = { hostname: config.hostname, namespace: 'acme', type: 'x' };
  for (const filename of ['terraform-provider-x_1.0.0_linux_amd64.zip', 'terraform-provider-x_1.0.0_SHA256SUMS']) {
    expect(await store.blobs.head(releaseObjectKey(address, '1.0.0', filename))).toBeNull();
  }
}

const zipPath = (d: string, platform: string, version = '1.0.0') => join(d, `terraform-provider-x_${version}_${platform}.zip`);

async function sumsFor(d: string): Promise<string> {
  const { sha256File } = await import('../../scripts/lib/provider/archive');
  const entries = [];
  for (const name of readdirSync(d).filter((n) => n.endsWith('.zip'))) entries.push({ filename: name, sha256Hex: (await sha256File(join(d, name))).sha256Hex });
  return formatShasums(entries);
}

describe('publish-provider refuses, naming the file and the fix, and writes nothing', () => {
  it('an invalid namespace', async () => {
    await refused({ paths: [await dist()], namespace: 'Bad_NS' }, /namespace "Bad_NS" is invalid/);
  });

  it('an invalid --type', async () => {
    await refused({ paths: [await dist()], type: 'my_type' }, /--type: type "my_type" is invalid/);
  });

  it('a version in a file name that is not strict semver', async () => {
    const d = join(dir, 'semver');
    await writeDist(d, 'x', '1.0', { platforms: ['linux_amd64'], protocols: null });
    await refused({ paths: [d] }, /terraform-provider-x_1\.0_linux_amd64\.zip: version "1\.0" is not a semantic version.*rename the file or pass --version/);
  });

  it('an invalid --version', async () => {
    await refused({ paths: [await dist()], version: 'v1.0.0' }, /--version: version "v1\.0\.0" is not a semantic version/);
  });

  it('an unknown platform', async () => {
    const d = await dist();
    copyFileSync(zipPath(d, 'linux_amd64'), zipPath(d, 'linux_amd65'));
    await refused({ paths: [d] }, /terraform-provider-x_1\.0\.0_linux_amd65\.zip: platform "linux_amd65": unknown arch "amd65".*rename the archive/);
  });

  it('an archive name goreleaser would not produce', async () => {
    const d = await dist();
    writeFileSync(join(d, 'terraform-provider-x-linux.zip'), 'zip?');
    await refused({ paths: [d] }, /terraform-provider-x-linux\.zip: archive names must be terraform-provider-TYPE_VERSION_OS_ARCH\.zip.*rename it/);
  });

  it('an unreadable zip', async () => {
    const d = await dist();
    writeFileSync(zipPath(d, 'linux_amd64'), 'this is not a zip file');
    await refused({ paths: [d] }, /archive .*terraform-provider-x_1\.0\.0_linux_amd64\.zip: not a readable zip file.*rebuild it/);
  });

  it('a zip without the provider executable', async () => {
    const d = await dist();
    writeFileSync(zipPath(d, 'linux_amd64'), await zipBuffers({ README: 'no binary here' }));
    await refused({ paths: [d] }, /archive .*linux_amd64\.zip: expected executable terraform-provider-x_v1\.0\.0 at the top level, found README/);
  });

  it('a zip holding the executable of another version', async () => {
    const d = await dist();
    writeFileSync(zipPath(d, 'linux_amd64'), await zipBuffers({ 'terraform-provider-x_v0.9.0': 'old' }));
    await refused({ paths: [d] }, /expected executable terraform-provider-x_v1\.0\.0 at the top level, found terraform-provider-x_v0\.9\.0/);
  });

  it('a windows zip whose executable lacks .exe', async () => {
    const d = await dist();
    writeFileSync(zipPath(d, 'windows_amd64'), await zipBuffers({ 'terraform-provider-x_v1.0.0': 'MZ' }));
    await refused({ paths: [d] }, /windows_amd64\.zip: expected executable terraform-provider-x_v1\.0\.0\.exe/);
  });

  it('an executable nested in a folder', async () => {
    const d = await dist();
    writeFileSync(zipPath(d, 'linux_amd64'), await zipBuffers({ 'bin/terraform-provider-x_v1.0.0': 'x' }));
    await refused({ paths: [d] }, /expected executable terraform-provider-x_v1\.0\.0 at the top level, found bin\/terraform-provider-x_v1\.0\.0/);
  });

  it('a platform given twice', async () => {
    const d = await dist();
    const binary = join(dir, 'terraform-provider-x_v1.0.0');
    writeFileSync(binary, '#!/bin/sh\n');
    await refused(
      { paths: [d], binaries: [`linux_amd64=${binary}`] },
      /platform linux_amd64 is given twice: .*linux_amd64\.zip and --binary linux_amd64=.*keep one/,
    );
  });

  it('SHA256SUMS with a different hash for an archive', async () => {
    const d = await dist();
    const sums = (await sumsFor(d)).replace(/^[0-9a-f]{64}/, 'f'.repeat(64));
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS'), sums);
    await refused(
      { paths: [d] },
      /_SHA256SUMS: terraform-provider-x_1\.0\.0_linux_amd64\.zip is listed with SHA-256 f{64} but the archive .* has [0-9a-f]{64}.*rebuild the release/,
    );
  });

  it('SHA256SUMS without a line for an archive', async () => {
    const d = await dist();
    const sums = (await sumsFor(d))
      .split('\n')
      .filter((l) => !l.includes('windows'))
      .join('\n');
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS'), sums);
    await refused({ paths: [d] }, /_SHA256SUMS: has no line for terraform-provider-x_1\.0\.0_windows_amd64\.zip/);
  });

  it('SHA256SUMS listing an archive that is not given', async () => {
    const d = await dist();
    const sums = `${await sumsFor(d)}${'e'.repeat(64)}  terraform-provider-x_1.0.0_freebsd_amd64.zip\n`;
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS'), sums);
    await refused({ paths: [d] }, /lists terraform-provider-x_1\.0\.0_freebsd_amd64\.zip, which is not among the archives given/);
  });

  it("SHA256SUMS listing goreleaser's manifest when no manifest is found (not in dist/, not in the repository root), or one that changed since", async () => {
    const d = await dist({ protocols: null });
    const manifestLine = `${'a'.repeat(64)}  terraform-provider-x_1.0.0_manifest.json\n`;
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS'), `${await sumsFor(d)}${manifestLine}`);
    await refused(
      { paths: [d] },
      /_SHA256SUMS: lists terraform-provider-x_1\.0\.0_manifest\.json, but no manifest was given; pass terraform-registry-manifest\.json/,
    );
    const release = await writeGoreleaserRelease(join(dir, `repo-${++counter}`), 'x', '1.0.0');
    writeFileSync(release.manifestPath, '{"version": 1, "metadata": {"protocol_versions": ["6.0"]}}');
    await refused(
      { paths: [release.dist] },
      /_SHA256SUMS: terraform-provider-x_1\.0\.0_manifest\.json is listed with SHA-256 [0-9a-f]{64} but \S+terraform-registry-manifest\.json has/,
    );
  });

  it('a malformed SHA256SUMS', async () => {
    const d = await dist();
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS'), 'hello world\n');
    await refused({ paths: [d] }, /_SHA256SUMS: SHA256SUMS line 1 is not "<sha256>  <filename>".*regenerate it/);
  });

  it('a signature made by a key the namespace does not have', async () => {
    const d = await dist();
    const sums = new TextEncoder().encode(await sumsFor(d));
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS'), sums);
    const privateKey = await openpgp.readPrivateKey({ armoredKey: readFileSync(stranger.path, 'utf8') });
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS.sig'), await signDetached(sums, privateKey));
    await refused(
      { paths: [d] },
      new RegExp(
        `_SHA256SUMS\\.sig: the signature \\(by key ${stranger.keyId}\\) does not verify against the namespace's public keys \\(keys tried: ${key.keyId}\\).*npm run keys -- import`,
      ),
    );
  });

  it('a signature over other bytes', async () => {
    const d = await dist();
    const sums = await sumsFor(d);
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS'), sums);
    const privateKey = await openpgp.readPrivateKey({ armoredKey: readFileSync(key.path, 'utf8') });
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS.sig'), await signDetached(new TextEncoder().encode(`${sums}\n`), privateKey));
    await refused({ paths: [d] }, /_SHA256SUMS\.sig: the signature .* does not verify/);
  });

  it('a .sig that is not a signature', async () => {
    const d = await dist();
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS'), await sumsFor(d));
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS.sig'), 'garbage');
    await refused({ paths: [d] }, /_SHA256SUMS\.sig: not an OpenPGP signature/);
  });

  it('a signature without its SHA256SUMS', async () => {
    const d = await dist();
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_SHA256SUMS.sig'), 'sig');
    await refused({ paths: [d] }, /_SHA256SUMS\.sig: a signature without its terraform-provider-x_1\.0\.0_SHA256SUMS/);
  });

  it('a manifest that is not JSON', async () => {
    const d = await dist();
    writeFileSync(join(d, 'terraform-provider-x_1.0.0_manifest.json'), '{ nope');
    await refused({ paths: [d] }, /_manifest\.json: not valid JSON.*protocol_versions/);
  });

  it('a manifest with bad protocol_versions', async () => {
    const d = await dist({ protocols: ['six'] });
    await refused({ paths: [d] }, /_manifest\.json: metadata\.protocol_versions must be a non-empty list like \["5\.0"\]/);
  });

  it('files naming two versions', async () => {
    const d = await dist();
    await writeDist(d, 'x', '1.1.0', { platforms: ['darwin_arm64'] });
    await refused({ paths: [d] }, /the files name different versions \(.*1\.0\.0.*1\.1\.0.*\); publish one provider version at a time, or pass --version/);
  });

  it('an empty directory', async () => {
    const d = join(dir, 'empty');
    mkdirSync(d, { recursive: true });
    await refused(
      { paths: [d], type: 'x', version: '1.0.0' },
      /^\S*\/empty is empty: expected a goreleaser dist\/ with terraform-provider-TYPE_VERSION_OS_ARCH\.zip files \(run goreleaser first\), or pass --binary OS_ARCH=PATH$/,
    );
  });

  it('a directory without archives', async () => {
    const d = join(dir, 'no-archives');
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'notes.txt'), 'not a release file');
    await refused(
      { paths: [d], type: 'x', version: '1.0.0' },
      /^no provider archives found in \S*\/no-archives: expected terraform-provider-TYPE_VERSION_OS_ARCH\.zip files/,
    );
  });

  it('a missing path', async () => {
    await refused({ paths: [join(dir, 'does-not-exist')] }, /does-not-exist: no such file or directory/);
  });

  it('a file that is not a release file', async () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'hi');
    await refused({ paths: [await dist(), path] }, /notes\.txt: not a provider release file/);
  });

  it('malformed, missing or unknown-platform --binary', async () => {
    await refused({ binaries: ['linux_amd64'], type: 'x', version: '1.0.0' }, /--binary linux_amd64: expected OS_ARCH=PATH/);
    await refused({ binaries: [`linux_amd64=${join(dir, 'missing-binary')}`], type: 'x', version: '1.0.0' }, /--binary .*missing-binary: cannot be read/);
    await refused({ binaries: [`linux_amd65=${key.path}`], type: 'x', version: '1.0.0' }, /platform "linux_amd65": unknown arch "amd65"/);
  });

  it('--binary without a type or version to name it', async () => {
    const binary = join(dir, 'provider-binary');
    writeFileSync(binary, 'x');
    await refused({ binaries: [`linux_amd64=${binary}`], version: '1.0.0' }, /cannot tell the provider type from the file names; pass --type/);
  });

  it('an unreadable, encrypted or non-key --key-file', async () => {
    await refused({ paths: [await dist()], keyFile: join(dir, 'nope.asc') }, /--key-file .*nope\.asc: cannot be read/);
    const notKey = join(dir, 'not-a-key.asc');
    writeFileSync(notKey, 'hello');
    await refused({ paths: [await dist()], keyFile: notKey }, /--key-file .*not-a-key\.asc: not an armored OpenPGP private key/);
    const privateKey = await openpgp.readPrivateKey({ armoredKey: readFileSync(key.path, 'utf8') });
    const encrypted = join(dir, 'encrypted.asc');
    writeFileSync(encrypted, (await openpgp.encryptKey({ privateKey, passphrase: 'correct horse' })).armor());
    await refused(
      { paths: [await dist()], keyFile: encrypted, processEnv: {} },
      /encrypted\.asc: the private key is encrypted; set EDGE_REGISTRY_SIGNING_KEY_PASSPHRASE/,
    );
    await refused(
      { paths: [await dist()], keyFile: encrypted, processEnv: { EDGE_REGISTRY_SIGNING_KEY_PASSPHRASE: 'wrong' } },
      /EDGE_REGISTRY_SIGNING_KEY_PASSPHRASE does not decrypt the private key/,
    );
  });

  it('--remote: refused, naming --registry URL with a publish token (the publish API is the one writer of releases)', async () => {
    await refused(
      { paths: [await dist()], remote: true, store: undefined, processEnv: {} },
      /publish-provider --remote is gone: .*--registry https:\/\/YOUR-REGISTRY and a publish token in \$EDGE_REGISTRY_TOKEN \(npm run token -- create --publish acme\/TYPE --remote\)/,
    );
    const cli = await runScript('publish-module', [dir, '--namespace', 'acme', '--name', 'vpc', '--system', 'aws', '--version', '1.0.0', '--remote']);
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.stderr).toMatch(/publish-module --remote is gone: .*npm run token -- create --publish acme\/vpc\/aws --remote/);
  });

  it("the local publish's token lives only while it runs: none left after a publish, nor after the Worker refuses one (409)", async () => {
    const before = await listTokens(store.kv);
    const release = (salt: string) => writeDist(join(dir, `tokened-${salt}`), 'tokened', '1.0.0', { platforms: ['linux_amd64'], salt });
    const published = await publishRelease({ paths: [await release('a')], namespace: 'acme', config, store, keyFile: key.path });
    expect(published.status).toBe('published');
    expect(await listTokens(store.kv)).toEqual(before);
    const other = publishRelease({ paths: [await release('b')], namespace: 'acme', config, store, keyFile: key.path });
    await expect(other).rejects.toMatchObject({ status: 409, message: expect.stringMatching(/already published with different contents/) });
    expect(await listTokens(store.kv)).toEqual(before);
  });

  it('never prints a private key in an error', async () => {
    const broken = join(dir, 'broken.asc');
    writeFileSync(broken, readFileSync(key.path, 'utf8').replace(/\n[A-Za-z0-9+/]{20}/, '\n!!!!'));
    const attempt = publishRelease({ paths: [await dist()], namespace: 'acme', config, store, keyFile: broken });
    await expect(attempt).rejects.toThrow(/broken\.asc/);
    const message = await attempt.catch((e: Error) => e.message);
    expect(message).not.toMatch(/BEGIN PGP|[A-Za-z0-9+/]{40}/);
  });
});

describe('publish-provider CLI exit codes', () => {
  it('exits 1 with "error: …" on stderr and nothing on stdout for an invalid release, 2 for usage errors', async () => {
    const d = await dist();
    writeFileSync(zipPath(d, 'linux_amd64'), 'broken');
    const result = await runScript('publish-provider', [d, '--namespace', 'acme', '--persist-to', state, '--key-file', key.path, '--json']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^error: archive .*linux_amd64\.zip: not a readable zip file/m);
    const usage = await runScript('publish-provider', [d]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--namespace is required[\s\S]*usage: npm run publish-provider/);
  });
});
