/**
 * The client side of bench/cost.ts: a local state with `providers` signed providers (the host's platform and four
 * more) and one module published into it by the CLI's own code, and a real `terraform init` of them all.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { publishModule } from '../scripts/lib/module/publish';
import { writeDemoModule } from '../scripts/lib/demo/module';
import { publishIntoState } from '../test/e2e/local-publish';
import { generateRelease, generateSigningKey } from '../test/e2e/release';
import { terraformInit as runInit } from '../test/e2e/terraform-init';

/** Where the mirror run's providers live: Terraform cannot resolve a mirror URL for a source address with a port. */
export const MIRRORED_HOSTNAME = 'registry.example.com';
const MODULE_HOSTNAME = 'modules.host.example';

/** Publishes acme/thing1…N under `hostname` and MIRRORED_HOSTNAME, and acme/vpc/aws under `hostname`, into `stateDir`. */
export async function publishState(dir: string, stateDir: string, hostname: string, providers: number): Promise<{ platforms: string[] }> {
  const goOs = process.platform === 'win32' ? 'windows' : process.platform;
  const goArch = process.arch === 'x64' ? 'amd64' : process.arch;
  const platforms = [...new Set([`${goOs}_${goArch}`, 'linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'])];
  const key = await generateSigningKey();
  const releases = [];
  for (let i = 1; i <= providers; i++) releases.push(await generateRelease(join(dir, 'dist', `p${i}`), `thing${i}`, '1.0.0', platforms, key));
  await publishIntoState(stateDir, hostname, 'acme', releases, key);
  // Terraform cannot resolve a mirror URL for a source address with a port: the mirror run installs
  // the same releases under a plain hostname (as for mirrored upstream providers).
  await publishIntoState(stateDir, MIRRORED_HOSTNAME, 'acme', releases, key);
  // One module (acme/vpc/aws: the demo module), published with publish-module's own code into the same state.
  const moduleDir = join(dir, 'module-vpc');
  writeDemoModule(moduleDir, '1.0.0', hostname);
  await publishModule({
    path: moduleDir,
    namespace: 'acme',
    name: 'vpc',
    system: 'aws',
    version: '1.0.0',
    persistTo: stateDir,
    hostname,
    configPath: join(import.meta.dirname, '..', 'wrangler.toml'),
  });
  return { platforms };
}

/** A real `terraform init` in `dir` of thing1…N and the module, with a token for private mode and a network mirror when given. */
export async function terraformInit(
  dir: string,
  options: { hostname: string; providers: number; token: string | null; mirror: string | null; certPath: string },
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const sourceHost = options.mirror ? MIRRORED_HOSTNAME : options.hostname;
  const required = Array.from(
    { length: options.providers },
    (_, i) => `    thing${i + 1} = { source = "${sourceHost}/acme/thing${i + 1}", version = "~> 1.0" }`,
  ).join('\n');
  // The module comes through the registry protocol either way (network mirrors are for providers only).
  // Terraform wants a dot in a module registry hostname: the CLI configuration's host block points
  // modules.host.example at this Worker's modules.v1 (as discovery would).
  const module = `module "vpc" {\n  source  = "${MODULE_HOSTNAME}/acme/vpc/aws"\n  version = "~> 1.0"\n}\n`;
  await writeFile(join(dir, 'main.tf'), `terraform {\n  required_providers {\n${required}\n  }\n}\n\n${module}`);
  const mirror = options.mirror ? `provider_installation {\n  network_mirror {\n    url = "${options.mirror}"\n  }\n}\n` : '';
  const moduleHost = `host "${MODULE_HOSTNAME}" {\n  services = {\n    "modules.v1" = "https://${options.hostname}/v1/modules/"\n  }\n}\n`;
  const credentials =
    options.token === null ? '' : [options.hostname, MODULE_HOSTNAME].map((h) => `credentials "${h}" {\n  token = "${options.token}"\n}\n`).join('');
  await writeFile(join(dir, 'cli.tfrc'), `${credentials}${moduleHost}${mirror}`);
  const result = await runInit(dir, options.certPath, 180_000);
  if (!result.ok) throw new Error(`cost: terraform init failed:\n${result.output}`);
}
