import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RegistryConfig } from '../config';
import type { StoreHandle } from '../stores/handle';
import { VersionConflictError } from '../../../src/store/errors';
import { publishModule, type PublishModuleResult } from '../module/publish';

/**
 * The sample module demo/vpc/aws (`npm run demo`): two versions, each with
 * one submodule (modules/subnet). It declares no providers, so a
 * `terraform init` of it needs nothing from the internet.
 */

export const DEMO_MODULE = { namespace: 'demo', name: 'vpc', system: 'aws' } as const;
export const DEMO_MODULE_VERSIONS = ['1.0.0', '1.1.0'] as const;

/**
 * Writes the demo module's tree for `version` into `dir` (created). Its
 * README names the module under `hostname` (REGISTRY_HOSTNAME), as the
 * module's page does when browsed on a local server (see snippets.ts).
 */
export function writeDemoModule(dir: string, version: string, hostname = 'registry.example.com'): void {
  mkdirSync(join(dir, 'modules', 'subnet'), { recursive: true });
  writeFileSync(
    join(dir, 'main.tf'),
    `terraform {
  required_version = ">= 1.3"
}

variable "name" {
  type        = string
  description = "Name of the network."
}

variable "cidr_block" {
  type        = string
  default     = "10.0.0.0/16"
  description = "Address range of the network."
  validation {
    condition     = can(cidrhost(var.cidr_block, 0))
    error_message = "cidr_block must be a CIDR range."
  }
}

variable "subnets" {
  type = map(object({
    cidr = string
    zone = optional(string)
  }))
  default     = {}
  description = "Subnets to carve out, by name."
}

module "subnet" {
  source   = "./modules/subnet"
  for_each = var.subnets
  name     = each.key
  cidr     = each.value.cidr
}

output "name" {
  value       = var.name
  description = "Name of the network."
}

output "version" {
  value       = "${version}"
  description = "Version of this module."
}

output "subnets" {
  value       = { for k, s in module.subnet : k => s.cidr }
  description = "CIDR of each subnet."
}
`,
  );
  writeFileSync(
    join(dir, 'modules', 'subnet', 'main.tf'),
    `variable "name" {
  type        = string
  description = "Name of the subnet."
}

variable "cidr" {
  type        = string
  description = "Address range of the subnet."
}

output "cidr" {
  value       = var.cidr
  description = "Address range of the subnet."
}
`,
  );
  writeFileSync(
    join(dir, 'README.md'),
    `# demo/vpc/aws ${version}

A sample module published by \`npm run demo\`. It creates nothing: it only
shows how modules, submodules and their docs look in this registry.

\`\`\`hcl
module "vpc" {
  source  = "${hostname}/demo/vpc/aws"
  version = "~> 1.1"
  name    = "main"
}
\`\`\`

The submodule is addressed as \`${hostname}/demo/vpc/aws//modules/subnet\`.
On a local server (\`npm start\`, a host without a dot) add the CLI \`host\`
block this module's page shows: it sends \`${hostname}\` to that server.
`,
  );
}

/** Publishes both demo versions into `store` (idempotent: a re-run is `unchanged`). */
export async function publishDemoModule(store: StoreHandle, config: RegistryConfig, log: (line: string) => void = () => {}): Promise<PublishModuleResult[]> {
  const work = mkdtempSync(join(tmpdir(), 'edge-registry-demo-module-'));
  try {
    const results: PublishModuleResult[] = [];
    for (const version of DEMO_MODULE_VERSIONS) {
      const dir = join(work, version);
      writeDemoModule(dir, version, config.hostname);
      try {
        results.push(await publishModule({ path: dir, ...DEMO_MODULE, version, store, config, log }));
      } catch (error) {
        // A state an older `npm run demo` filled holds this version with an older README: keep it (immutable).
        if (!(error instanceof VersionConflictError)) throw error;
        log(
          `kept      demo/vpc/aws ${version}: an earlier npm run demo published it with other contents (versions are immutable; start from an empty state to get the current one)`,
        );
      }
    }
    return results;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
