import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishIntoState } from '../e2e/local-publish';
import { generateRelease, generateSigningKey } from '../e2e/release';
import { tempDir } from './helpers';
import { filesOriginReadyKey } from '../../src/store/layout';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

// `npm run static-documents` (issue 38): the backfill of PUBLIC_DOCUMENTS=r2's static copies for a registry
// published before the setting was on, from wrangler.toml's environment, on the local state (a real publish into
// Miniflare's persisted KV and R2, then the CLI as users run it).

const { dir, cleanup } = tempDir('static-documents-cli');
const state = join(dir, 'state');
const HOST = 'registry.example.com';

/** The repository's wrangler.toml with `extra` lines in its top-level [vars], written beside the state. */
function configWith(name: string, extra: string): string {
  const text = readFileSync(join(root, 'wrangler.toml'), 'utf8').replace('ACCESS = "public"\n', `ACCESS = "public"\n${extra}`);
  const path = join(root, `.wrangler-${name}-${process.pid}.toml`);
  writeFileSync(path, text);
  return path;
}

const configs: string[] = [];

/** Miniflare's R2 bucket and KV namespace over the local state the CLI writes (the same files, another process). */
async function withState(use: (r2: R2Bucket, kv: KVNamespace) => Promise<void>): Promise<void> {
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null, { status: 404 }) } }',
    defaultPersistRoot: join(state, 'v3'),
    r2Persist: true,
    kvPersist: true,
    r2Buckets: { REGISTRY_R2: 'edge-registry' },
    kvNamespaces: { REGISTRY_KV: 'edge-registry-local' },
  });
  try {
    await use((await mf.getR2Bucket('REGISTRY_R2')) as unknown as R2Bucket, (await mf.getKVNamespace('REGISTRY_KV')) as unknown as KVNamespace);
  } finally {
    await mf.dispose();
  }
}
async function cli(config: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'scripts', 'run.mjs'), 'static-documents', '--config', config, '--persist-to', state], {
      cwd: root,
      timeout: 180_000,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code?: number; stdout?: string; stderr?: string };
    return { code: code ?? -1, output: `${stdout ?? ''}${stderr ?? ''}` };
  }
}

describe('npm run static-documents', () => {
  beforeAll(async () => {
    const key = await generateSigningKey();
    await publishIntoState(state, HOST, 'acme', [await generateRelease(join(dir, 'dist'), 'later', '1.0.0', ['linux_amd64'], key)], key);
  });
  afterAll(async () => {
    for (const path of configs) (await import('node:fs')).rmSync(path, { force: true });
    cleanup();
  });

  it('writes the copies of every list and download document, download URLs on FILES_ORIGIN; an unreachable domain: exit 1, no marker', async () => {
    const config = configWith('on', 'PUBLIC_DOCUMENTS = "r2"\nFILES_ORIGIN = "https://files.example.com"\n');
    configs.push(config);
    const result = await cli(config);
    expect(result.code, result.output).toBe(1);
    expect(result.output).toMatch(/(\d+) static documents written .*served on https:\/\/files\.example\.com/);
    expect(result.output).toContain('could not reach https://files.example.com');
    expect(result.output).toContain('until this check passes the Worker keeps serving provider metadata and files itself');
    await withState(async (r2, kv) => {
      const list = await r2.get(`v1/providers/${HOST}/acme/later/versions`);
      expect(list?.httpMetadata?.cacheControl).toBe('no-cache');
      expect(JSON.parse(await list!.text()).versions[0].version).toBe('1.0.0');
      const download = JSON.parse(await (await r2.get(`v1/providers/${HOST}/acme/later/1.0.0/download/linux/amd64`))!.text());
      expect(download.download_url).toBe(`https://files.example.com/${HOST}/acme/later/1.0.0/terraform-provider-later_1.0.0_linux_amd64.zip`);
      expect(await r2.head(`v1/mirror/${HOST}/acme/later/index.json`)).not.toBeNull();
      // Not checked: the Worker is not told to send anyone there.
      expect(await kv.get(filesOriginReadyKey)).toBeNull();
    });
  });

  it('checks the files domain: the marker is written only once it serves the bucket and refuses private objects', async () => {
    const { createServer } = await import('node:http');
    // The files domain, played by a server answering each path from the bucket (Miniflare's R2 over the same state),
    // or with `status` (a domain not attached to this bucket, or without the WAF rule).
    type Domain = { probe: 'bucket' | number; secret: 'bucket' | number; code: number; says: string; ready: boolean };
    const cases: Domain[] = [
      { probe: 404, secret: 403, code: 1, says: 'answered HTTP 404: the domain does not serve this bucket yet', ready: false },
      { probe: 'bucket', secret: 'bucket', code: 1, says: 'answered 200: the domain serves the bucket', ready: false },
      { probe: 'bucket', secret: 403, code: 0, says: 'serves the bucket (v1/files-origin-check) and refuses private objects (HTTP 403', ready: true },
    ];
    for (const domain of cases) {
      await withState(async (r2, kv) => {
        await kv.delete(filesOriginReadyKey);
        const asked: string[] = [];
        const server = createServer(async (request, response) => {
          const path = request.url ?? '';
          asked.push(path);
          const answer = path === '/v1/files-origin-check' ? domain.probe : domain.secret;
          const object = answer === 'bucket' ? await r2.get(path.slice(1)) : null;
          if (object) response.writeHead(200).end(await object.text());
          else response.writeHead(answer === 'bucket' ? 404 : answer).end();
        });
        const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
        try {
          const origin = `http://127.0.0.1:${port}`;
          const config = configWith(`check-${cases.indexOf(domain)}`, `PUBLIC_DOCUMENTS = "r2"\nFILES_ORIGIN = "${origin}"\n`);
          configs.push(config);
          const result = await cli(config);
          expect(result.code, result.output).toBe(domain.code);
          expect(result.output).toContain(domain.says);
          expect(asked).toEqual(domain.probe === 'bucket' ? ['/v1/files-origin-check', '/.files-origin-check'] : ['/v1/files-origin-check']);
          const marker = await kv.get(filesOriginReadyKey);
          if (domain.ready) expect(JSON.parse(marker!).files_origin).toBe(origin);
          else expect(marker).toBeNull();
        } finally {
          await new Promise((resolve) => server.close(resolve));
        }
      });
    }
  });

  it('refuses, naming the fix, when the environment does not set PUBLIC_DOCUMENTS, and when it is set in private mode', async () => {
    const off = configWith('off', '');
    const privateMode = configWith('private', 'PUBLIC_DOCUMENTS = "r2"\nFILES_ORIGIN = "https://files.example.com"\n');
    writeFileSync(privateMode, readFileSync(privateMode, 'utf8').replace('ACCESS = "public"', 'ACCESS = "private"'));
    configs.push(off, privateMode);
    const notSet = await cli(off);
    expect(notSet.code).toBe(1);
    expect(notSet.output).toContain('does not set PUBLIC_DOCUMENTS = "r2"');
    const inPrivate = await cli(privateMode);
    expect(inPrivate.code).toBe(1);
    expect(inPrivate.output).toContain('needs ACCESS = "public"');
  });
});
