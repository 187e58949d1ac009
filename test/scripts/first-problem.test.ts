import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRelease } from '../../scripts/lib/provider/release';
import { publishModule } from '../../scripts/lib/module/publish';
import { InputError } from '../../src/protocol/errors';
import { configPath, runScript, tempDir } from './helpers';

/**
 * A newcomer's bad input gets the real problem named first (issue 17 part 2):
 * what is missing is checked in the order a user can fix it — the files
 * before the names read from them, the input before the credentials to
 * store it, every missing option at once. Each case is what a user types.
 * The cases run concurrently (each CLI run is mostly tsx starting up).
 */

const { dir, cleanup } = tempDir('first-problem');
afterAll(cleanup);

// No Cloudflare credentials in the environment, whatever the machine has: --remote would complain about them.
const NO_CLOUDFLARE = {
  CLOUDFLARE_ACCOUNT_ID: '',
  CLOUDFLARE_API_TOKEN: '',
  R2_ACCESS_KEY_ID: '',
  R2_SECRET_ACCESS_KEY: '',
  EDGE_REGISTRY_SIGNING_KEY: '',
  SIGNING_KEY_SECRET: '',
};

function folder(name: string, files: Record<string, string> = {}): string {
  const path = join(dir, name);
  mkdirSync(path, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(path, file), text);
  return path;
}

async function refusal(attempt: Promise<unknown>): Promise<string> {
  const error = await attempt.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InputError);
  return (error as Error).message;
}

describe.concurrent('publish-provider', () => {
  it('a folder without release files, no --type or --version: "no provider archives", not "pass --type"', async () => {
    const wrong = folder('wrong', { 'notes.txt': 'not a release' });
    expect(await refusal(readRelease({ paths: [wrong] }))).toMatch(
      /^no provider archives found in \S*wrong: expected terraform-provider-TYPE_VERSION_OS_ARCH\.zip files/,
    );
  });

  it('the same with --type: still "no provider archives", not "pass --version"', async () => {
    expect(await refusal(readRelease({ paths: [folder('wrong')], type: 'x' }))).toMatch(/^no provider archives found/);
  });

  it('an empty folder: "is empty", whatever else is missing', async () => {
    expect(await refusal(readRelease({ paths: [folder('empty')] }))).toMatch(/empty is empty: expected a goreleaser dist\//);
  });

  it('--binary naming a missing file, no --type: the missing file, not "pass --type"', async () => {
    expect(await refusal(readRelease({ paths: [], binaries: [`linux_amd64=${join(dir, 'no-such-binary')}`] }))).toMatch(
      /^--binary \S*no-such-binary: cannot be read/,
    );
  });

  it('the command from the issue exits 1 naming the missing archives', async () => {
    const result = await runScript('publish-provider', [folder('wrong'), '--namespace', 'acme', '--persist-to', join(dir, 'state')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: no provider archives found in /m);
    expect(result.stderr).not.toContain('pass --type');
  });
});

describe.concurrent('publish-module', () => {
  it('every missing option in one usage error (not one per run)', async () => {
    const result = await runScript('publish-module', [join(dir, 'nowhere'), '--namespace', 'acme']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('error: --name, --system and --version are required');
    const bare = await runScript('publish-module', []);
    expect(bare.stderr).toContain('error: the module directory or package, --namespace, --name, --system and --version are required');
  });

  it('a missing directory is named before a malformed version or name', async () => {
    const message = await refusal(publishModule({ path: join(dir, 'nowhere'), namespace: 'acme', name: 'vpc', system: 'aws', version: '1.0', configPath }));
    expect(message).toMatch(/nowhere: no such file or directory; give the module's directory/);
  });
});

describe.concurrent('mirror import', () => {
  it('a missing directory with --remote: the directory, not the missing Cloudflare credentials', async () => {
    const result = await runScript('mirror', ['import', join(dir, 'no-mirror'), '--remote', '--wrangler-config', configPath], NO_CLOUDFLARE);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: \S*no-mirror: no such directory; give the directory `terraform providers mirror DIR` wrote/m);
    const empty = await runScript('mirror', ['import', folder('empty-mirror'), '--remote', '--wrangler-config', configPath], NO_CLOUDFLARE);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/^error: \S*empty-mirror holds no provider: expected HOST\/NAMESPACE\/TYPE\/index\.json/m);
    expect(result.stderr + empty.stderr).not.toMatch(/CLOUDFLARE/);
  });
});

describe.concurrent('keys import', () => {
  it('no key given with --remote: the key, not the credentials', async () => {
    const result = await runScript('keys', ['import', '--namespace', 'acme', '--remote'], NO_CLOUDFLARE);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: import needs --key-file PATH \(public or private key\) or EDGE_REGISTRY_SIGNING_KEY/m);
  });

  it('a missing key file with --remote: that file', async () => {
    const result = await runScript('keys', ['import', '--namespace', 'acme', '--key-file', join(dir, 'missing.asc'), '--remote'], NO_CLOUDFLARE);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: --key-file \S*missing\.asc: cannot be read \(ENOENT\)/m);
  });

  it('--held-by-registry --remote without a key: the key, before the missing SIGNING_KEY_SECRET and credentials', async () => {
    const result = await runScript('keys', ['import', '--namespace', 'acme', '--held-by-registry', '--remote'], NO_CLOUDFLARE);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: import --held-by-registry needs the private key: --key-file PATH or EDGE_REGISTRY_SIGNING_KEY/m);
  });
});
