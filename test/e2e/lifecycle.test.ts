import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAMESPACE, TYPE, publishState, type PublishedState } from './fixture';
import { parseLockFile } from './installer';
import { startDevServer, type DevServer } from './server';
import { missing, terraform } from '../tools';

/**
 * Deprecate and withdraw as real `terraform init` (1.11) sees them: the CLI
 * (`npm run lifecycle`) changes the local state `wrangler dev` serves, over
 * HTTPS, and terraform installs from it as the origin registry. Records the
 * transcripts (console) for the docs: what a configuration whose lock file
 * pins a withdrawn version gets.
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

let state: PublishedState;
let server: DevServer;
let source: string;

beforeAll(async () => {
  state = await publishState();
  source = `${state.hostname}/${NAMESPACE}/${TYPE}`;
  // INDEX_CACHE_SECONDS 0: each request reads what the CLI just wrote (the bound itself is tested elsewhere).
  server = await startDevServer({
    stateDir: state.stateDir,
    port: state.port,
    certificate: state.certificate,
    vars: { REGISTRY_HOSTNAME: state.hostname, INDEX_CACHE_SECONDS: '0' },
  });
});
afterAll(async () => {
  await server?.stop();
  await state?.dispose();
});

async function lifecycle(...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', WRANGLER_SEND_METRICS: 'false' };
  const { stdout, stderr } = await run('npm', ['run', '--silent', 'lifecycle', '--', ...args, '--hostname', state.hostname, '--persist-to', state.stateDir], {
    cwd: root,
    env,
    timeout: 90_000,
  });
  return stderr + stdout;
}

/** terraform init in `dir` (created with main.tf for `constraint` unless it exists); never throws: exit code and output. */
/** Terraform wraps warnings at 78 columns: compare with whitespace runs made single spaces. */
const flat = (text: string) => text.replace(/\s+/g, ' ');

async function init(dir: string, constraint: string, ...args: string[]): Promise<{ code: number; output: string; flat: string }> {
  await mkdir(dir, { recursive: true });
  if (!existsSync(join(dir, 'main.tf'))) {
    await writeFile(
      join(dir, 'main.tf'),
      `terraform {\n  required_providers {\n    thing = {\n      source  = "${source}"\n      version = "${constraint}"\n    }\n  }\n}\n`,
    );
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    TF_CLI_CONFIG_FILE: join(dir, 'cli.tfrc'),
    SSL_CERT_FILE: state.certificate.certPath,
    CHECKPOINT_DISABLE: '1',
    TF_IN_AUTOMATION: '1',
  };
  await writeFile(join(dir, 'cli.tfrc'), '# the origin registry\n');
  try {
    const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color', ...args], { cwd: dir, env, timeout: 90_000 });
    return { code: 0, output: stdout + stderr, flat: flat(stdout + stderr) };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    const output = `${e.stdout ?? ''}${e.stderr ?? ''}`;
    return { code: typeof e.code === 'number' ? e.code : -1, output, flat: flat(output) };
  }
}

describe.skipIf(missing('terraform', terraform))('terraform init against deprecated and withdrawn versions', () => {
  it('prints deprecations; a withdrawn version is no longer selected, and a lock file pinning it stops with a warning saying why and what to run', async () => {
    const dirs = (name: string) => join(state.root, 'lifecycle', name);
    // Before: "~> 1.2" selects 1.3.0, locked.
    const before = await init(dirs('locked'), '~> 1.2');
    expect(before.code, before.output).toBe(0);
    const lock = await readFile(join(dirs('locked'), '.terraform.lock.hcl'), 'utf8');
    expect(parseLockFile(lock).get(source)?.version).toBe('1.3.0');
    await cp(dirs('locked'), dirs('fresh-clone'), { recursive: true, filter: (path) => !path.includes('.terraform/') && !path.endsWith('.terraform') });

    const deprecated = await lifecycle('deprecate', `${NAMESPACE}/${TYPE}`, '--version', '1.2.0', '--message', 'leaks connections; use >= 1.2.5');
    expect(deprecated).toContain('1.2.0: deprecated');
    const withdrawn = await lifecycle('withdraw', `${NAMESPACE}/${TYPE}`, '--version', '1.3.0', '--message', 'corrupts state on upgrade, use 1.2.5');
    expect(withdrawn).toContain('1.3.0: withdrawn');

    // A new configuration: "~> 1.2" now selects 1.2.5, and init prints both messages.
    const fresh = await init(dirs('new'), '~> 1.2');
    console.log(`--- terraform init, new configuration "~> 1.2" after withdrawing 1.3.0:\n${fresh.output}`);
    expect(fresh.code, fresh.output).toBe(0);
    expect(fresh.output).toContain(`Installed ${source} v1.2.5`);
    expect(fresh.flat).toContain('1.2.0 is deprecated: leaks connections; use >= 1.2.5');
    expect(fresh.flat).toMatch(/1\.3\.0 was withdrawn on \d{4}-\d\d-\d\d: corrupts state on upgrade, use 1\.2\.5/);

    // The lock file pins 1.3.0 and the provider is already installed in .terraform: init re-checks the registry.
    const installed = await init(dirs('locked'), '~> 1.2');
    console.log(`--- terraform init, lock file pins withdrawn 1.3.0, provider already in .terraform/:\n${installed.output}`);
    // A fresh clone (CI): the lock file pins 1.3.0, nothing installed.
    const clone = await init(dirs('fresh-clone'), '~> 1.2');
    console.log(`--- terraform init, lock file pins withdrawn 1.3.0, fresh clone:\n${clone.output}`);
    expect(clone.code).not.toBe(0);
    expect(clone.flat).toMatch(/1\.3\.0 was withdrawn on \d{4}-\d\d-\d\d: corrupts state on upgrade, use 1\.2\.5/);
    expect(clone.flat).toContain('the previously-selected version 1.3.0 is no longer available');
    expect(clone.flat).toContain('run "terraform init -upgrade" (or "tofu init -upgrade") to select another version');
    // Having the provider installed in .terraform/ does not help: terraform 1.11 asks the registry all the same.
    expect(installed.code).not.toBe(0);
    expect(installed.flat).toContain('the previously-selected version 1.3.0 is no longer available');
    // What the message tells them to do works: -upgrade moves the lock to 1.2.5.
    const upgraded = await init(dirs('fresh-clone'), '~> 1.2', '-upgrade');
    console.log(`--- terraform init -upgrade on that clone:\n${upgraded.output}`);
    expect(upgraded.code, upgraded.output).toBe(0);
    expect(parseLockFile(await readFile(join(dirs('fresh-clone'), '.terraform.lock.hcl'), 'utf8')).get(source)?.version).toBe('1.2.5');

    // Restored: the pinned clone installs 1.3.0 again.
    await lifecycle('restore', `${NAMESPACE}/${TYPE}`, '--version', '1.3.0');
    const again = await init(dirs('locked'), '~> 1.2');
    expect(again.code, again.output).toBe(0);
  });

  it('counts each real terraform init once: N installs of 1.2.0 are N downloads, in JSON and on the page', async () => {
    const N = 3;
    const results = await Promise.all(Array.from({ length: N }, (_, i) => init(join(state.root, 'counted', String(i)), '= 1.2.0')));
    for (const r of results) expect(r.output).toContain(`Installed ${source} v1.2.0`);
    const platform = `${process.platform === 'darwin' ? 'darwin' : 'linux'}_${process.arch === 'x64' ? 'amd64' : process.arch}`;
    const ca = state.certificate.pem;
    const { get } = await import('./http');
    let summary: { versions: Record<string, { total: number; platforms: Record<string, number> }> } = { versions: {} };
    for (let i = 0; i < 40 && (summary.versions['1.2.0']?.total ?? 0) < N; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      summary = JSON.parse((await get(`${server.origin}/v1/downloads/providers/${NAMESPACE}/${TYPE}`, { ca })).body.toString('utf8'));
    }
    await new Promise((resolve) => setTimeout(resolve, 1000)); // an overcount would show by now
    summary = JSON.parse((await get(`${server.origin}/v1/downloads/providers/${NAMESPACE}/${TYPE}`, { ca })).body.toString('utf8'));
    console.log(`--- downloads after ${N} terraform init of = 1.2.0:\n${JSON.stringify(summary)}`);
    expect(summary.versions['1.2.0']).toEqual({ total: N, platforms: { [platform]: N } });
    const page = (await get(`${server.origin}/providers/${NAMESPACE}/${TYPE}/1.2.0`, { ca, headers: { accept: 'text/html' } })).body.toString('utf8');
    expect(page).toContain(`<strong>${N}</strong> of 1.2.0`);
  });
});
