import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generateSigningKey } from '../../scripts/lib/keys/keyring';
import { zipBuffers } from '../../scripts/lib/provider/zip-binary';
import { executableName } from '../../src/protocol/release-files';
import { parsePlatformName } from '../../src/protocol/index';
import { freePort, startDevServer, type DevServer } from '../e2e/server';

/** Helpers for the publish/keys tests: temp dirs, generated releases, CLI runs, `wrangler dev`. */

export const root = join(import.meta.dirname, '..', '..');
export const configPath = join(root, 'wrangler.toml');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const execFileAsync = promisify(execFile);

/** A temp directory removed by the returned cleanup. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `edge-registry-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The environment for a CLI run a test kills with SIGKILL: its own TMPDIR
 * inside `dir` (removed with it). A killed process cannot remove what it put
 * in the temp directory (Miniflare's miniflare-* folder), and the run's leak
 * check (test/fixtures/leaks.setup.ts) would count that against the suite.
 */
export function killableEnv(dir: string): { TMPDIR: string } {
  const tmp = join(dir, `tmp-${process.pid}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(tmp, { recursive: true });
  return { TMPDIR: tmp };
}

export interface DistOptions {
  platforms?: string[];
  /** Changes the executables' bytes (a "rebuilt" release). */
  salt?: string;
  /** Written as the manifest's protocol_versions; null = no manifest. */
  protocols?: string[] | null;
  /** Bytes of filler in each executable (for size/speed tests). */
  padding?: number;
}

/** Writes a goreleaser-like dist/ (zips + optional manifest) into `dir` and returns `dir`. */
export async function writeDist(dir: string, type: string, version: string, options: DistOptions = {}): Promise<string> {
  mkdirSync(dir, { recursive: true });
  for (const name of options.platforms ?? ['linux_amd64', 'darwin_arm64', 'windows_amd64']) {
    const platform = parsePlatformName(name);
    const body = `#!/bin/sh\necho ${type} ${version} ${name} ${options.salt ?? ''}\n` + (options.padding ? 'x'.repeat(options.padding) : '');
    const zip = await zipBuffers({ [executableName(type, version, platform)]: body, 'CHANGELOG.md': `# ${version}\n` });
    writeFileSync(join(dir, `terraform-provider-${type}_${version}_${name}.zip`), zip);
  }
  const protocols = options.protocols === undefined ? ['6.0'] : options.protocols;
  if (protocols) {
    writeFileSync(join(dir, `terraform-provider-${type}_${version}_manifest.json`), JSON.stringify({ version: 1, metadata: { protocol_versions: protocols } }));
  }
  return dir;
}

/** A fresh RSA key file (armored private key) in `dir`; returns its path and key id. */
export async function writeKeyFile(
  dir: string,
  name = 'signer.asc',
  type: 'rsa' | 'ecc' = 'ecc',
): Promise<{ path: string; keyId: string; publicArmor: string }> {
  const key = await generateSigningKey({ name: 'test signer', type });
  const path = join(dir, name);
  writeFileSync(path, key.armoredPrivateKey, { mode: 0o600 });
  return { path, keyId: key.publicKey.key_id, publicArmor: key.publicKey.ascii_armor };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs scripts/NAME.ts with tsx; never throws for a non-zero exit. */
export async function runScript(name: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await execFileAsync(tsx, [join(root, 'scripts', `${name}.ts`), ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    const code = typeof e.code === 'number' ? e.code : -1;
    // An internal failure (exit 3) is never what a test wants to see by accident: keep its words in the log.
    if (code === 3 || code === -1) {
      const trace = /stack trace in (\S+);/.exec(e.stderr ?? '')?.[1];
      console.error(`scripts/${name}.ts ${args.join(' ')} exited ${code}:\n${e.stderr ?? ''}${trace ? readFileSync(trace, 'utf8') : ''}`);
    }
    return { code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

export { freePort };
export type WranglerDev = DevServer;

/**
 * Starts `wrangler dev` on `persistTo` and a free port (the e2e suite's
 * starter: its own process group, resolves once it answers).
 */
export async function startWranglerDev(persistTo: string, vars: Record<string, string> = {}): Promise<WranglerDev> {
  return startDevServer({ stateDir: persistTo, port: await freePort(), vars });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** True when `command --version` runs. */
export function have(command: string, args = ['--version']): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}
