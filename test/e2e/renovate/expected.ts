import { MODULE } from './registry';

/** What Renovate proposes for the repository of ./renovate/repository.ts with the registry of ./renovate/registry.ts. */
export const EXPECTED_PROPOSALS = [
  // 1.3.0 is withdrawn: never proposed. 1.2.0 is deprecated, which providers.v1 cannot tell Renovate (docs/update-bots.md).
  { packageFile: 'infra/main.tf', depName: 'thing', currentValue: '1.0.0', updates: ['1.2.0 (minor)', '2.0.0 (major)'] },
  // 1.2.0 of the module is withdrawn.
  { packageFile: 'infra/main.tf', depName: MODULE, currentValue: '1.0.0', updates: ['1.1.0 (minor)', '2.0.0 (major)'] },
  { packageFile: 'infra/main.tf', depName: MODULE, currentValue: '~> 1.0.0', updates: ['~> 1.1.0 (minor)', '~> 2.0.0 (major)'] },
  { packageFile: 'range/main.tf', depName: 'thing', currentValue: '~> 1.0', updates: ['~> 1.0 (minor)', '~> 2.0 (major)'] },
];
