import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generateRelease, generateSigningKey, type GeneratedRelease, type SigningKeyPair } from './release';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';

/**
 * The state the e2e tests install from, made as a user would make it: a
 * generated, signed multi-platform release of acme/thing in several
 * versions (goreleaser's dist/ layout), published with the real CLI
 * (`npm run keys -- import`, `npm run publish-provider`) into a fresh
 * --persist-to directory that `wrangler dev` then serves.
 *
 * - localhost:PORT/acme/thing, every version, SHA256SUMS signed beforehand
 *   (the goreleaser path: the CLI verifies the supplied signature with the
 *   imported key and publishes it as is). The servers listen on PORT, so
 *   this one is the origin registry for that address.
 * - registry.example.com/acme/thing, two versions, zips only, signed by the
 *   CLI with --key-file: installed through the network mirror.
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

export const NAMESPACE = 'acme';
export const TYPE = 'thing';
export const VERSIONS = ['1.2.0', '1.2.5', '1.3.0', '1.4.0-beta.1', '2.0.0'];
export const MIRRORED_VERSIONS = ['1.3.0', '2.0.0'];
export const PLATFORMS = ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'];
export const MIRRORED_HOSTNAME = 'registry.example.com';

export interface PublishedState {
  root: string;
  stateDir: string;
  port: number;
  /** localhost:PORT */
  hostname: string;
  key: SigningKeyPair;
  releases: GeneratedRelease[];
  certificate: Certificate;
  /** Everything the CLI printed. */
  cliLog: string[];
  dispose(): Promise<void>;
}

export async function publishState(): Promise<PublishedState> {
  const dir = await mkdtemp(join(tmpdir(), 'edge-registry-e2e-'));
  try {
    const key = await generateSigningKey();
    const publicKeyFile = join(dir, 'signing-key.pub.asc');
    const privateKeyFile = join(dir, 'signing-key.asc');
    await writeFile(publicKeyFile, key.publicArmored);
    await writeFile(privateKeyFile, key.privateArmored, { mode: 0o600 });
    const releases: GeneratedRelease[] = [];
    for (const version of VERSIONS) releases.push(await generateRelease(join(dir, 'dist', version), TYPE, version, PLATFORMS, key));

    const port = await freePort();
    const hostname = `localhost:${port}`;
    const stateDir = join(dir, 'state');
    const cliLog: string[] = [];
    const npm = async (script: string, args: string[]) => {
      const { stdout, stderr } = await cli(script, args);
      cliLog.push(`$ npm run ${script} -- ${args.join(' ')}\n${stderr}${stdout}`);
      return stdout;
    };
    const local = ['--persist-to', stateDir, '--namespace', NAMESPACE];

    await npm('keys', ['import', '--key-file', publicKeyFile, '--hostname', hostname, ...local]);
    for (const release of releases) {
      const out = JSON.parse(await npm('publish-provider', [release.dir, '--hostname', hostname, '--json', ...local])) as { status: string; key_id: string };
      if (out.status !== 'published' || out.key_id !== key.keyId) throw new Error(`publish ${release.version}: ${JSON.stringify(out)}`);
    }
    for (const release of releases.filter((r) => MIRRORED_VERSIONS.includes(r.version))) {
      await npm('publish-provider', [...release.archives.values(), '--hostname', MIRRORED_HOSTNAME, '--key-file', privateKeyFile, '--json', ...local]);
    }
    return {
      root: dir,
      stateDir,
      port,
      hostname,
      key,
      releases,
      certificate: makeCertificate(dir),
      cliLog,
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** `wrangler dev` on the published state, on its port, over HTTPS or plain HTTP. */
export function serve(state: PublishedState, options: { https: boolean }): Promise<DevServer> {
  return startDevServer({
    stateDir: state.stateDir,
    port: state.port,
    certificate: options.https ? state.certificate : undefined,
    // GZIP_DOCUMENTS as in production, so our installer and terraform take the compressed path.
    vars: { REGISTRY_HOSTNAME: state.hostname, GZIP_DOCUMENTS: 'true' },
  });
}

/** Runs `npm run SCRIPT -- ARGS` in the project, as a user would; throws with its output when it fails. */
async function cli(script: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  // Only what the CLI needs: no signing key or Cloudflare credentials leak in from the environment.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', WRANGLER_SEND_METRICS: 'false' };
  try {
    return await run('npm', ['run', '--silent', script, '--', ...args], { cwd: root, env, timeout: 90_000 });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`npm run ${script} -- ${args.join(' ')} failed:\n${stderr ?? ''}${stdout ?? ''}`);
  }
}
