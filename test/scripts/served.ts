import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { StoreHandle } from '../../scripts/lib/stores/handle';
import { sleep } from './helpers';

/**
 * What a running `wrangler dev` serves, read as a client would: the publish
 * end-to-end files (publish-e2e, publish-e2e-recovery) check their CLI runs
 * through these. `origin` is read at each call (the server may be restarted).
 */
export function servedRegistry(origin: () => string, namespace = 'acme') {
  async function getJson(path: string): Promise<{ status: number; url: string; body: any }> {
    const url = new URL(path, origin()).href;
    const response = await fetch(url);
    return { status: response.status, url, body: response.status === 200 ? await response.json() : await response.text() };
  }

  async function download(url: string): Promise<Buffer> {
    const response = await fetch(url);
    expect(response.status, url).toBe(200);
    return Buffer.from(await response.arrayBuffer());
  }

  /** Served version numbers of NAMESPACE/TYPE ([] when the provider is not found). */
  async function servedVersions(type: string): Promise<string[]> {
    const { status, body } = await getJson(`/v1/providers/${namespace}/${type}/versions`);
    return status === 200 ? (body.versions as { version: string }[]).map((v) => v.version) : [];
  }

  /** Waits (polling) until the served version list satisfies `check`; returns the seconds it took. */
  async function waitForVersions(type: string, check: (versions: string[]) => boolean, timeoutMs = 8000): Promise<number> {
    const start = Date.now();
    for (;;) {
      if (check(await servedVersions(type))) return (Date.now() - start) / 1000;
      if (Date.now() - start > timeoutMs) throw new Error(`served versions of ${type} still ${JSON.stringify(await servedVersions(type))}`);
      await sleep(100);
    }
  }

  /**
   * Verifies one platform the way Terraform's installer does, with real tools;
   * returns the download document and the archive bytes. `downloads` collects
   * files for sha256sum -c.
   */
  async function verifyLikeTerraform(type: string, version: string, platform: string, downloads: string): Promise<{ doc: any; archive: Buffer }> {
    const [os, arch] = platform.split('_');
    const { status, url, body: doc } = await getJson(`/v1/providers/${namespace}/${type}/${version}/download/${os}/${arch}`);
    expect(status).toBe(200);
    expect([doc.os, doc.arch]).toEqual([os, arch]);
    expect(doc.shasum).toMatch(/^[0-9a-f]{64}$/);
    const archive = await download(new URL(doc.download_url, url).href);
    const sums = await download(new URL(doc.shasums_url, url).href);
    const signature = await download(new URL(doc.shasums_signature_url, url).href);
    expect(sha256(archive)).toBe(doc.shasum);
    const line = sums
      .toString('utf8')
      .split('\n')
      .find((l) => l.endsWith(`  ${doc.filename}`));
    expect(line, `SHA256SUMS line for ${doc.filename}`).toBe(`${doc.shasum}  ${doc.filename}`);

    // gpg --verify with the served key, in a throwaway GNUPGHOME with a short path: gpg-agent's socket
    // lives in it, and a Unix socket path over ~107 bytes makes the agent (and so `gpg --import`) fail.
    const home = mkdtempSync(join(tmpdir(), 'gpg-'));
    chmodSync(home, 0o700);
    const keys = doc.signing_keys.gpg_public_keys as { key_id: string; ascii_armor: string }[];
    expect(keys.length).toBeGreaterThan(0);
    writeFileSync(join(home, 'key.asc'), keys.map((k) => k.ascii_armor).join('\n'));
    writeFileSync(join(downloads, doc.filename), archive);
    writeFileSync(join(downloads, 'SHA256SUMS'), sums);
    writeFileSync(join(downloads, 'SHA256SUMS.sig'), signature);
    try {
      execFileSync('gpg', ['--batch', '--homedir', home, '--import', join(home, 'key.asc')], { stdio: 'pipe' });
      const verify = spawnSync(
        'gpg',
        ['--batch', '--homedir', home, '--status-fd', '1', '--verify', join(downloads, 'SHA256SUMS.sig'), join(downloads, 'SHA256SUMS')],
        { encoding: 'utf8' },
      );
      expect(verify.status, verify.stderr).toBe(0);
      const validsig = /\[GNUPG:\] VALIDSIG ([0-9A-F]{40})/.exec(verify.stdout);
      expect(validsig, verify.stdout).not.toBeNull();
      expect(keys.map((k) => k.key_id)).toContain(validsig![1]!.slice(-16));
    } finally {
      spawnSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
      rmSync(home, { recursive: true, force: true });
    }
    return { doc, archive };
  }

  return { getJson, download, servedVersions, waitForVersions, verifyLikeTerraform };
}

export const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Every KV key and value of the state (read through a second Miniflare). */
export async function snapshot(store: StoreHandle): Promise<string> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.kv.list({ prefix: '', ...(cursor ? { cursor } : {}) });
    for (const { name } of page.keys) out.push(`${name}=${await store.kv.get(name, 'text')}`);
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  return out.join('\n');
}
