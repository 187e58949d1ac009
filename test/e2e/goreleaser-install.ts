import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { GoreleaserRelease } from '../fixtures/goreleaser';
import { get } from './http';
import { terraformInit } from './terraform-init';

/**
 * What every way in must leave for a goreleaser release (test/fixtures/goreleaser.ts) once published, checked
 * against the served registry: every platform listed with the manifest's protocols (6.0), the served SHA256SUMS
 * byte for byte the one goreleaser wrote (so a publisher's own signature keeps verifying: `gpg --verify` with
 * their public key), and a real `terraform init` installing it from `host`.
 */
export async function expectServedAndInstalled(o: {
  origin: string;
  certificate: { pem: string; certPath: string };
  host: string;
  namespace: string;
  release: GoreleaserRelease;
  keyId: string;
  /** The publisher's own public key: the served signature is theirs, checked with gpg. */
  publisherKey?: string;
  work: string;
}): Promise<string> {
  const { release, namespace } = o;
  mkdirSync(o.work, { recursive: true });
  const https = async (path: string) => {
    const response = await get(new URL(path, o.origin).href, { ca: o.certificate.pem, headers: { 'accept-encoding': 'identity' } });
    expect(response.status, `${path}: ${response.body.toString().slice(0, 300)}`).toBe(200);
    return response.body;
  };
  // The lists may serve a "not found" answer for INDEX_CACHE_SECONDS (5 s locally) after an earlier miss.
  let versions: { versions: { version: string; protocols: string[]; platforms: { os: string; arch: string }[] }[] } = { versions: [] };
  for (let waited = 0; waited <= 15_000; waited += 500) {
    const response = await get(`${o.origin}/v1/providers/${namespace}/${release.name}/versions`, { ca: o.certificate.pem });
    if (response.status === 200) versions = JSON.parse(response.body.toString());
    if (versions.versions.some((v) => v.version === release.version)) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const listed = versions.versions.find((v) => v.version === release.version)!;
  expect(listed.protocols).toEqual(['6.0']);
  expect(listed.platforms.map((p) => `${p.os}_${p.arch}`).sort()).toEqual([...release.platforms].sort());

  const doc = JSON.parse((await https(`/v1/providers/${namespace}/${release.name}/${release.version}/download/linux/amd64`)).toString()) as {
    protocols: string[];
    shasums_url: string;
    shasums_signature_url: string;
  };
  expect(doc.protocols).toEqual(['6.0']);
  const sums = await https(doc.shasums_url);
  expect(Buffer.compare(sums, Buffer.from(release.shasums))).toBe(0);
  if (o.publisherKey) {
    const home = join(o.work, 'gnupg');
    mkdirSync(home, { recursive: true });
    chmodSync(home, 0o700);
    writeFileSync(join(o.work, 'SHA256SUMS'), sums);
    writeFileSync(join(o.work, 'SHA256SUMS.sig'), await https(doc.shasums_signature_url));
    expect(Buffer.compare(readFileSync(join(o.work, 'SHA256SUMS.sig')), readFileSync(release.signaturePath!))).toBe(0);
    try {
      spawnSync('gpg', ['--batch', '--homedir', home, '--import'], { input: o.publisherKey, stdio: ['pipe', 'pipe', 'pipe'] });
      const verified = spawnSync(
        'gpg',
        ['--batch', '--homedir', home, '--status-fd', '1', '--verify', join(o.work, 'SHA256SUMS.sig'), join(o.work, 'SHA256SUMS')],
        { encoding: 'utf8' },
      );
      expect(verified.status, verified.stderr).toBe(0);
      expect(verified.stdout).toMatch(/\[GNUPG:\] GOODSIG/);
    } finally {
      spawnSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
    }
  }

  writeFileSync(
    join(o.work, 'main.tf'),
    `terraform {\n  required_providers {\n    scaffolding = {\n      source  = "${o.host}/${namespace}/${release.name}"\n      version = "${release.version}"\n    }\n  }\n}\n`,
  );
  writeFileSync(join(o.work, 'cli.tfrc'), `host "${o.host}" {\n  services = {\n    "providers.v1" = "${o.origin}/v1/providers/"\n  }\n}\n`);
  const init = await terraformInit(o.work, o.certificate.certPath);
  expect(init.ok, init.output).toBe(true);
  expect(init.output).toContain(`Installed ${o.host}/${namespace}/${release.name} v${release.version} (self-signed, key ID ${o.keyId})`);
  const lock = readFileSync(join(o.work, '.terraform.lock.hcl'), 'utf8');
  expect(lock).toMatch(/h1:[A-Za-z0-9+/]{43}=/);
  return init.output;
}
