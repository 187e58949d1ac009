import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateRelease, generateSigningKey, type GeneratedRelease, type SigningKeyPair } from './release';
import { publishIntoState } from './local-publish';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';

/**
 * One running registry for a test file: a temp directory, a generated and
 * signed multi-platform release of acme/thing in several versions, published
 * into a fresh local state under this server's own hostname (localhost:PORT,
 * so it is the origin registry for that address) and under
 * registry.example.com (served only through the mirror), then `wrangler dev`
 * on that state, over HTTPS when asked.
 */
export const NAMESPACE = 'acme';
export const TYPE = 'thing';
export const VERSIONS = ['1.1.0', '1.2.0', '1.2.5', '1.3.0', '1.4.0-beta.1', '2.0.0'];
export const PLATFORMS = ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'];
export const MIRRORED_HOSTNAME = 'registry.example.com';

export interface RunningRegistry {
  server: DevServer;
  /** localhost:PORT, the hostname of the providers this server is the origin of. */
  hostname: string;
  root: string;
  key: SigningKeyPair;
  releases: GeneratedRelease[];
  certificate?: Certificate;
  close(): Promise<void>;
}

export async function startRegistry(options: { https: boolean }): Promise<RunningRegistry> {
  const root = await mkdtemp(join(tmpdir(), 'edge-registry-e2e-'));
  let server: DevServer | undefined;
  try {
    const key = await generateSigningKey();
    const releases: GeneratedRelease[] = [];
    for (const version of VERSIONS) {
      releases.push(await generateRelease(join(root, 'dist', version), TYPE, version, PLATFORMS, key));
    }
    const port = await freePort();
    const hostname = `localhost:${port}`;
    const stateDir = join(root, 'state');
    for (const host of [hostname, MIRRORED_HOSTNAME]) await publishIntoState(stateDir, host, NAMESPACE, releases, key);
    const certificate = options.https ? makeCertificate(root) : undefined;
    server = await startDevServer({ stateDir, port, certificate, vars: { REGISTRY_HOSTNAME: hostname } });
    const running = server;
    return {
      server, hostname, root, key, releases, certificate,
      async close() {
        await running.stop();
        await rm(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}
