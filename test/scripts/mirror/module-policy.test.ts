import { describe, expect, it } from 'vitest';
import { formatPolicy, parsePolicy } from '../../../src/protocol/mirror-policy';
import { moduleAllowanceFor } from '../../../src/protocol/module-policy';

/**
 * The module part of the pull-through policy (src/protocol/module-policy.ts):
 * which upstream modules are proxied under which of our namespaces, each
 * refusal with the path and the fix.
 */
const parse = (value: unknown) => parsePolicy(JSON.stringify(value), 'policy.json');
const ours = (namespace: string, name: string, system: string) => ({ hostname: 'registry.acme.com', namespace, name, system });

describe('module rules', () => {
  const policy = parse({
    modules: [
      { source: 'registry.terraform.io/terraform-aws-modules/*/*', versions: '>= 5' },
      { source: 'cloudposse/label/null', versions: '~> 0.25', as: 'cp' },
    ],
    hosts: { 'codeload.github.com': { archives: 'http://127.0.0.1:9000/codeload' } },
  });

  it('a policy of modules alone is valid; it formats back to the same policy', () => {
    expect(policy.rules).toEqual([]);
    expect(policy.modules.map((r) => [r.hostname, r.namespace, r.name, r.system, r.as])).toEqual([
      ['registry.terraform.io', 'terraform-aws-modules', null, null, 'terraform-aws-modules'],
      ['registry.terraform.io', 'cloudposse', 'label', 'null', 'cp'],
    ]);
    expect(policy.hosts['codeload.github.com']!.archives).toBe('http://127.0.0.1:9000/codeload/');
    expect(parsePolicy(formatPolicy(policy), 'again')).toEqual(policy);
  });

  it("maps our namespace to the upstream module and allows the rule's versions", () => {
    const vpc = moduleAllowanceFor(policy.modules, ours('terraform-aws-modules', 'vpc', 'aws'))!;
    expect(vpc.upstream).toEqual({ hostname: 'registry.terraform.io', namespace: 'terraform-aws-modules', name: 'vpc', system: 'aws' });
    expect(vpc.allows('5.1.0')).toBe(true);
    expect(vpc.allows('4.9.0')).toBe(false);
    expect(vpc.allows('6.0.0-beta')).toBe(false); // pre-releases only when named exactly
    const label = moduleAllowanceFor(policy.modules, ours('cp', 'label', 'null'))!;
    expect(label.upstream).toEqual({ hostname: 'registry.terraform.io', namespace: 'cloudposse', name: 'label', system: 'null' });
    expect(moduleAllowanceFor(policy.modules, ours('cp', 'other', 'null'))).toBeNull();
    expect(moduleAllowanceFor(policy.modules, ours('cloudposse', 'label', 'null'))).toBeNull();
    expect(moduleAllowanceFor(policy.modules, ours('acme', 'vpc', 'aws'))).toBeNull();
  });

  const refusals: [string, unknown, RegExp][] = [
    ['neither providers nor modules', { hosts: {} }, /"providers" must be a non-empty array .*\(or give "modules"\)/],
    ['modules not an array', { modules: {} }, /policy\.json: "modules" must be an array/],
    [
      'an unknown entry field',
      { modules: [{ source: 'a/b/c', versions: '1', namespace: 'x' }] },
      /modules\[0\]: unknown field "namespace" \(allowed: source, versions, as\)/,
    ],
    ['no source', { modules: [{ versions: '1' }] }, /modules\[0\]: "source" .* is required/],
    ['no versions', { modules: [{ source: 'a/b/c' }] }, /modules\[0\]: "versions" .* is required/],
    [
      'a provider-shaped source',
      { modules: [{ source: 'hashicorp/aws', versions: '1' }] },
      /modules\[0\]\.source: "hashicorp\/aws" must be HOST\/NAMESPACE\/NAME\/SYSTEM/,
    ],
    ['a wildcard namespace', { modules: [{ source: 'registry.terraform.io/*/vpc/aws', versions: '1' }] }, /the namespace cannot be a pattern/],
    ['a wildcard hostname', { modules: [{ source: '*/a/vpc/aws', versions: '1' }] }, /the hostname cannot be a pattern/],
    ['a partial wildcard', { modules: [{ source: 'a/vpc-*/aws', versions: '1' }] }, /\* stands for a whole name, not part of one/],
    ['an invalid system', { modules: [{ source: 'a/vpc/AW-S', versions: '1' }] }, /modules\[0\]\.source: module system "AW-S" is invalid/],
    ['a malformed constraint', { modules: [{ source: 'a/vpc/aws', versions: '>>1' }] }, /modules\[0\]\.versions: /],
    ['an invalid "as"', { modules: [{ source: 'a/vpc/aws', versions: '1', as: '-x' }] }, /modules\[0\]\.as: module namespace "-x" is invalid/],
    [
      'one of our namespaces given two upstreams',
      {
        modules: [
          { source: 'a/vpc/aws', versions: '1', as: 'x' },
          { source: 'b/vpc/aws', versions: '1', as: 'x' },
        ],
      },
      /our namespace "x" is given two upstreams \(registry\.terraform\.io\/a and registry\.terraform\.io\/b\); give one of them another namespace with "as"/,
    ],
    [
      'an archives base that is not https',
      { modules: [{ source: 'a/vpc/aws', versions: '1' }], hosts: { 'codeload.github.com': { archives: 'http://10.0.0.1/' } } },
      /is not https/,
    ],
  ];
  for (const [what, value, message] of refusals) {
    it(`refuses ${what}`, () => expect(() => parse(value)).toThrow(message));
  }
});
