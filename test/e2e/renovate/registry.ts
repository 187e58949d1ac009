import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readRegistryConfig } from '../../../scripts/lib/config';
import { openLocalStore } from '../../../scripts/lib/stores/local';
import { writeDemoModule } from '../../../scripts/lib/demo/module';
import { publishModule } from '../../../scripts/lib/module/publish';
import { h1Hash } from '../../../src/protocol/hashes';
import { publishIntoState } from '../local-publish';
import { generateRelease, generateSigningKey, zipDigests } from '../release';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from '../server';
import { startRoutingProxy, type RoutingProxy } from './proxy';

/**
 * One registry for a Renovate test file, as Renovate must see it: served by
 * `wrangler dev` over HTTPS under the dotted name registry.acme.test (a
 * certificate made here for that name), reached through a CONNECT proxy on
 * loopback that routes registry.acme.test:443 to it — the way a bot reaches
 * `https://HOST` derived from a source address HOST/NS/TYPE. Holds
 * acme/thing (4 platforms) and the module acme/vpc/aws in the versions below;
 * 1.3.0 of the provider and 1.2.0 of the module are withdrawn, 1.2.0 of the
 * provider deprecated (npm run lifecycle), before the server starts.
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');

export const HOST = 'registry.acme.test';
export const PROVIDER = `${HOST}/acme/thing`;
export const MODULE = `${HOST}/acme/vpc/aws`;
export const PROVIDER_VERSIONS = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '2.0.0'];
export const MODULE_VERSIONS = ['1.0.0', '1.0.1', '1.1.0', '1.2.0', '2.0.0'];
export const WITHDRAWN = { provider: '1.3.0', module: '1.2.0' };
export const DEPRECATED = { provider: '1.2.0' };
export const PLATFORMS = ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'];

export interface RenovateRegistry {
  dir: string;
  server: DevServer;
  proxy: RoutingProxy;
  certificate: Certificate;
  /** version → the lock-file hashes Terraform records for every published platform (h1: and zh:), sorted. */
  hashes: Map<string, string[]>;
  /** `npm run token -- create …` in this state (the real CLI); '' in public mode. */
  readToken: string;
  stop(): Promise<void>;
}

export async function startRenovateRegistry(access: 'public' | 'private'): Promise<RenovateRegistry> {
  const dir = await mkdtemp(join(tmpdir(), `edge-registry-renovate-${access}-`));
  const stateDir = join(dir, 'state');
  const key = await generateSigningKey();
  const releases = [];
  for (const version of PROVIDER_VERSIONS) releases.push(await generateRelease(join(dir, 'dist', version), 'thing', version, PLATFORMS, key));
  await publishIntoState(stateDir, HOST, 'acme', releases, key);
  const hashes = new Map<string, string[]>();
  for (const release of releases) {
    const list: string[] = [];
    for (const path of release.archives.values()) {
      const bytes = await readFile(path);
      list.push(h1Hash(await zipDigests(bytes)), `zh:${createHash('sha256').update(bytes).digest('hex')}`);
    }
    hashes.set(release.version, list.sort());
  }

  const config = await readRegistryConfig({ configPath: join(root, 'wrangler.toml'), persistTo: stateDir });
  const store = await openLocalStore(config);
  try {
    for (const version of MODULE_VERSIONS) {
      const tree = join(dir, 'modules', version);
      writeDemoModule(tree, version, HOST);
      await publishModule({ path: tree, namespace: 'acme', name: 'vpc', system: 'aws', version, hostname: HOST, store, config });
    }
  } finally {
    await store.close();
  }
  const cli = async (script: string, ...args: string[]) => {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', WRANGLER_SEND_METRICS: 'false' };
    const { stdout } = await run('npm', ['run', '--silent', script, '--', ...args, '--persist-to', stateDir], { cwd: root, env, timeout: 90_000 });
    return stdout;
  };
  await cli('lifecycle', 'withdraw', 'acme/thing', '--version', WITHDRAWN.provider, '--message', 'corrupts state, use 1.2.0', '--hostname', HOST);
  await cli('lifecycle', 'deprecate', 'acme/thing', '--version', DEPRECATED.provider, '--message', 'leaks connections, use 2.0.0', '--hostname', HOST);
  await cli('lifecycle', 'withdraw', 'acme/vpc/aws', '--version', WITHDRAWN.module, '--message', 'breaks routing', '--hostname', HOST);
  const readToken = access === 'private' ? (await cli('token', 'create', '--namespace', 'acme', '--name', 'renovate')).trimEnd().split('\n').at(-1)! : '';

  const certificate = makeCertificate(dir, HOST);
  const port = await freePort();
  const server = await startDevServer({
    stateDir,
    port,
    certificate,
    vars: {
      REGISTRY_HOSTNAME: HOST,
      GZIP_DOCUMENTS: 'true',
      ...(access === 'private' ? { ACCESS: 'private', URL_SIGNING_SECRET: 'e2e-renovate-signing-secret-at-least-32-characters' } : {}),
    },
  });
  const proxy = await startRoutingProxy({ [`${HOST}:443`]: port });
  return {
    dir,
    server,
    proxy,
    certificate,
    hashes,
    readToken,
    async stop() {
      await proxy.close();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
