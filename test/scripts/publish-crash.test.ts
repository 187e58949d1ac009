import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import * as openpgp from 'openpgp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig, type RegistryConfig } from '../../scripts/lib/config';
import { KILL_ENV } from '../../scripts/lib/progress';
import { configPath, killableEnv, root, runScript, tempDir, writeDist } from './helpers';

/**
 * The crash-safety matrix and the same-version race, with the real CLI on a
 * real local state: a publish SIGKILLed at every stage it reports (and at
 * random moments) leaves the served state old or new-and-whole, never a
 * listed version that fails verification; a re-run completes it without
 * waiting on a lock; of concurrent publishers of one version with different
 * bytes exactly one succeeds and the served release is entirely its own.
 * The served state is read back through a separate Miniflare and checked as
 * Terraform would: archive SHA-256 = document shasum = SHA256SUMS line =
 * mirror zh:, and the signature verifies with the served key.
 */

const { dir, cleanup } = tempDir('crash');
const state = join(dir, 'state');
const keyFile = join(dir, 'signer.asc');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
let config: RegistryConfig;

const publishArgs = (dist: string) => ['scripts/publish-provider.ts', dist, '--namespace', 'acme', '--persist-to', state, '--key-file', keyFile, '--json'];

/** Runs a publish; kills it with SIGKILL after `killAfterMs` from its "publishing" line when given. */
function runPublish(
  dist: string,
  env: NodeJS.ProcessEnv = {},
  killAfterMs?: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  const child = spawn(tsx, publishArgs(dist), { cwd: root, env: { ...process.env, ...killableEnv(dir), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => {
    stderr += d;
    if (killAfterMs !== undefined && /publishing /.test(stderr) && !child.killed) {
      setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    }
  });
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr, ms: Date.now() - started })));
}

interface Served {
  versions: string[];
  /** Listed versions that fail verification, with why. */
  broken: string[];
}

/** Reads the served state through its own Miniflare and verifies every listed version as Terraform would. */
async function servedState(type: string): Promise<Served> {
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null); } }',
    compatibilityDate: config.compatibilityDate,
    defaultPersistRoot: config.localPersistRoot,
    kvNamespaces: { KV: config.kvNamespaceId },
    r2Buckets: { R2: config.bucketName },
  });
  try {
    const kv = await mf.getKVNamespace('KV');
    const r2 = await mf.getR2Bucket('R2');
    const base = `${config.hostname}/acme/${type}`;
    const listText = await kv.get(`v1/providers/${base}/versions`, 'text');
    const list = listText ? (JSON.parse(listText) as { versions: { version: string; platforms: { os: string; arch: string }[] }[] }) : { versions: [] };
    const mirrorText = await kv.get(`v1/mirror/${base}/index.json`, 'text');
    const mirrorVersions = mirrorText ? Object.keys((JSON.parse(mirrorText) as { versions: object }).versions) : [];
    const broken: string[] = [];
    const versions = list.versions.map((v) => v.version);
    if (JSON.stringify(mirrorVersions) !== JSON.stringify(versions)) broken.push(`mirror lists ${mirrorVersions} but the registry ${versions}`);
    for (const { version, platforms } of list.versions) {
      const mirrorDoc = await kv.get(`v1/mirror/${base}/${version}.json`, 'text');
      const archives = mirrorDoc ? (JSON.parse(mirrorDoc) as { archives: Record<string, { hashes: string[] }> }).archives : {};
      for (const { os, arch } of platforms) {
        const docText = await kv.get(`v1/providers/${base}/${version}/download/${os}_${arch}`, 'text');
        if (!docText) {
          broken.push(`${version} ${os}_${arch}: no download document`);
          continue;
        }
        const doc = JSON.parse(docText) as { filename: string; shasum: string; signing_keys: { gpg_public_keys: { ascii_armor: string }[] } };
        const bytes = async (name: string) => {
          const object = await r2.get(`${base}/${version}/${name}`);
          return object ? new Uint8Array(await object.arrayBuffer()) : null;
        };
        const archive = await bytes(doc.filename);
        const sums = await bytes(`terraform-provider-${type}_${version}_SHA256SUMS`);
        const signature = await bytes(`terraform-provider-${type}_${version}_SHA256SUMS.sig`);
        if (!archive || !sums || !signature) {
          broken.push(`${version} ${os}_${arch}: a release file is missing`);
          continue;
        }
        const sha = createHash('sha256').update(archive).digest('hex');
        if (sha !== doc.shasum) broken.push(`${version} ${os}_${arch}: archive SHA-256 ${sha} ≠ document ${doc.shasum}`);
        if (!new TextDecoder().decode(sums).split('\n').includes(`${sha}  ${doc.filename}`))
          broken.push(`${version} ${os}_${arch}: no SHA256SUMS line for the archive`);
        if (!archives[`${os}_${arch}`]?.hashes.includes(`zh:${sha}`)) broken.push(`${version} ${os}_${arch}: mirror zh: ≠ archive`);
        try {
          const keys = await Promise.all(doc.signing_keys.gpg_public_keys.map((k) => openpgp.readKey({ armoredKey: k.ascii_armor })));
          const verified = await openpgp.verify({
            message: await openpgp.createMessage({ binary: sums }),
            signature: await openpgp.readSignature({ binarySignature: signature }),
            verificationKeys: keys,
            expectSigned: true,
          });
          await verified.signatures[0]!.verified;
        } catch (error) {
          broken.push(`${version}: signature does not verify (${(error as Error).message})`);
        }
      }
    }
    return { versions, broken };
  } finally {
    await mf.dispose();
  }
}

beforeAll(async () => {
  config = await readRegistryConfig({ configPath, persistTo: state });
  const generated = await runScript('keys', ['generate', '--namespace', 'acme', '--type', 'ecc', '--key-file', keyFile, '--persist-to', state]);
  expect(generated.code, generated.stderr).toBe(0);
}, 120_000);

afterAll(() => cleanup());

const figures = { tried: 0, corrupt: 0, blocked: 0, slowestRerunMs: 0 };

describe('a publish killed at any moment', () => {
  // Every stage the publish reports — each upload to the Worker's session (2 archives + SHA256SUMS +
  // signature), the commit about to be sent, the commit sent (the local runtime, and with it the Worker's
  // commit, dies with the CLI) — then random moments.
  const stages = ['upload#1', 'upload#2', 'upload#3', 'upload#4', 'record', 'commit-sent'];
  const randomDelays = [0, 40, 120].map((base) => base + Math.floor(Math.random() * 40));

  it.each([
    ...stages.map((stage) => ({ stage, delay: undefined as number | undefined })),
    ...randomDelays.map((delay) => ({ stage: `random ${delay} ms`, delay })),
  ])(
    'killed at $stage: the served state stays old or whole, and a re-run completes without waiting',
    async ({ stage, delay }) => {
      const index = figures.tried++;
      const version = `1.${index}.0`;
      const dist = await writeDist(join(dir, `crash-${index}`), 'crashy', version, { platforms: ['linux_amd64', 'darwin_arm64'] });
      const before = await servedState('crashy');

      const killed = await runPublish(dist, delay === undefined ? { [KILL_ENV]: stage } : {}, delay);
      // tsx relays the killed node process as a non-zero exit; either way no result was printed.
      if (delay === undefined) {
        expect(killed.code === 0, killed.stderr).toBe(false);
        expect(killed.stdout).toBe('');
      }
      const after = await servedState('crashy');
      if (after.broken.length > 0) figures.corrupt++;
      expect(after.broken).toEqual([]);
      // Old state, or old plus the new version whole.
      expect([before.versions, [...before.versions, version]]).toContainEqual(after.versions);

      const rerun = await runPublish(dist);
      figures.slowestRerunMs = Math.max(figures.slowestRerunMs, rerun.ms);
      if (/waiting for/.test(rerun.stderr)) figures.blocked++;
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(rerun.stderr).not.toMatch(/waiting for/);
      expect(['published', 'unchanged', 'repaired']).toContain(JSON.parse(rerun.stdout).status);
      const completed = await servedState('crashy');
      expect(completed.broken).toEqual([]);
      expect(completed.versions).toEqual([...before.versions, version]);
    },
    240_000, // two CLI runs and two state reads: ~10 s on a quiet 2-core machine, far more when it is shared
  );

  it('of concurrent publishers of one version with different bytes exactly one wins, and the served release is all its own', async () => {
    const publishers = 4;
    const dists = await Promise.all(
      Array.from({ length: publishers }, (_, i) =>
        writeDist(join(dir, `race-${i}`), 'racy', '3.0.0', { platforms: ['linux_amd64', 'windows_amd64'], salt: `publisher ${i}` }),
      ),
    );
    const results = await Promise.all(dists.map((d) => runPublish(d)));
    const winners = results.filter((r) => r.code === 0);
    expect(winners, results.map((r) => r.stderr).join('\n----\n')).toHaveLength(1);
    for (const loser of results.filter((r) => r.code !== 0)) {
      expect(loser.code).toBe(1);
      expect(loser.stderr).toMatch(/error: .*acme\/racy 3\.0\.0 is already published with different contents/);
      expect(loser.stderr).not.toMatch(/\n\s+at /); // no stack trace
    }
    const served = await servedState('racy');
    expect(served.broken).toEqual([]);
    expect(served.versions).toEqual(['3.0.0']);
    // Every served hash is the winner's.
    const won = JSON.parse(winners[0]!.stdout) as { platforms: { filename: string; shasum: string }[] };
    const mf = await servedShasums(
      'racy',
      '3.0.0',
      won.platforms.map((p) => p.filename),
    );
    expect(mf).toEqual(won.platforms.map((p) => p.shasum));
    console.log(
      `crash matrix: ${figures.tried} kills tried, ${figures.corrupt} corrupt, ${figures.blocked} re-runs blocked (slowest re-run ${figures.slowestRerunMs} ms); race: ${publishers} publishers, ${winners.length} winner`,
    );
  }, 300_000);
});

async function servedShasums(type: string, version: string, filenames: string[]): Promise<string[]> {
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null); } }',
    compatibilityDate: config.compatibilityDate,
    defaultPersistRoot: config.localPersistRoot,
    kvNamespaces: { KV: config.kvNamespaceId },
  });
  try {
    const kv = await mf.getKVNamespace('KV');
    const out: string[] = [];
    for (const filename of filenames) {
      const platform = filename.replace(/^.*_(\w+_\w+)\.zip$/, '$1');
      const doc = JSON.parse((await kv.get(`v1/providers/${config.hostname}/acme/${type}/${version}/download/${platform}`, 'text'))!) as { shasum: string };
      out.push(doc.shasum);
    }
    return out;
  } finally {
    await mf.dispose();
  }
}
