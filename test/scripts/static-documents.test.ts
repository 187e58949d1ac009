import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishIntoState } from '../e2e/local-publish';
import { generateRelease, generateSigningKey } from '../e2e/release';
import { tempDir } from './helpers';

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

  it('writes the copies of every list and download document, download URLs on FILES_ORIGIN', async () => {
    const config = configWith('on', 'PUBLIC_DOCUMENTS = "r2"\nFILES_ORIGIN = "https://files.example.com"\n');
    configs.push(config);
    const result = await cli(config);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toMatch(/(\d+) static documents written .*served on https:\/\/files\.example\.com/);
    expect(result.output).toContain('could not check https://files.example.com');
    const mf = new Miniflare({
      modules: true,
      script: 'export default { fetch() { return new Response(null, { status: 404 }) } }',
      defaultPersistRoot: join(state, 'v3'),
      r2Persist: true,
      r2Buckets: { REGISTRY_R2: 'edge-registry' },
    });
    try {
      const r2 = await mf.getR2Bucket('REGISTRY_R2');
      const list = await r2.get(`v1/providers/${HOST}/acme/later/versions`);
      expect(list?.httpMetadata?.cacheControl).toBe('no-cache');
      expect(JSON.parse(await list!.text()).versions[0].version).toBe('1.0.0');
      const download = JSON.parse(await (await r2.get(`v1/providers/${HOST}/acme/later/1.0.0/download/linux/amd64`))!.text());
      expect(download.download_url).toBe(`https://files.example.com/${HOST}/acme/later/1.0.0/terraform-provider-later_1.0.0_linux_amd64.zip`);
      expect(await r2.head(`v1/mirror/${HOST}/acme/later/index.json`)).not.toBeNull();
    } finally {
      await mf.dispose();
    }
  });

  it('checks that the files domain refuses private objects: fails while it serves one, passes once it refuses', async () => {
    const { createServer } = await import('node:http');
    for (const [status, code, says] of [
      [200, 1, 'answered 200: the domain serves the bucket'],
      [403, 0, 'refuses private objects (HTTP 403 for .files-origin-check)'],
    ] as const) {
      const asked: string[] = [];
      const server = createServer((request, response) => {
        asked.push(request.url ?? '');
        response.writeHead(status).end();
      });
      const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
      try {
        const config = configWith(`check-${status}`, `PUBLIC_DOCUMENTS = "r2"\nFILES_ORIGIN = "http://127.0.0.1:${port}"\n`);
        configs.push(config);
        const result = await cli(config);
        expect(result.code, result.output).toBe(code);
        expect(result.output).toContain(says);
        expect(asked).toEqual(['/.files-origin-check']);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
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
