import { HOST, MODULE, PROVIDER } from './registry';

/**
 * The Terraform repository Renovate works on (what a platform team's
 * repository looks like): infra/ pins the provider and the module exactly and
 * the module once more with "~> 1.0.0"; range/ allows "~> 1.0" of the
 * provider. Both lock the provider at 1.0.0 with every published platform's
 * hashes (as `terraform providers lock` writes them).
 */
export function lockFile(version: string, constraints: string, hashes: readonly string[]): string {
  return `# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "${PROVIDER}" {
  version     = "${version}"
  constraints = "${constraints}"
  hashes = [
${hashes.map((hash) => `    "${hash}",`).join('\n')}
  ]
}
`;
}

export function repositoryFiles(hashes100: readonly string[]): Record<string, string> {
  return {
    'infra/main.tf': `terraform {
  required_providers {
    thing = {
      source  = "${PROVIDER}"
      version = "1.0.0"
    }
  }
}

module "vpc" {
  source  = "${MODULE}"
  version = "1.0.0"
  name    = "main"
}

module "vpc_compat" {
  source  = "${MODULE}"
  version = "~> 1.0.0"
  name    = "compat"
}
`,
    'infra/.terraform.lock.hcl': lockFile('1.0.0', '1.0.0', hashes100),
    'range/main.tf': `terraform {
  required_providers {
    thing = {
      source  = "${PROVIDER}"
      version = "~> 1.0"
    }
  }
}
`,
    'range/.terraform.lock.hcl': lockFile('1.0.0', '~> 1.0', hashes100),
    'README.md': `Infrastructure using ${HOST}.\n`,
  };
}
