import { describe, expect, it } from 'vitest';
import { type PackageRef, type Place, parseScope, packagePlace, rightsAllow, scopeGrants, tokenRights } from '../../src/access/scope';
import { publisherRights, type TrustedPublisher } from '../../src/access/publishers';

/**
 * The one scope rule (src/access/scope.ts) for reads and publishes. Stored records keep meaning exactly what they
 * meant under the two matchers it replaced (read scopes in access/tokens.ts, publish rights in
 * access/package-rights.ts, both copied below as they were): every stored grant of a grid, against every place of a
 * grid, decides as before. Then hostile cases: whole parts only, never another host, patterns never widen.
 */

const OWN = 'registry.example.com';

// ---- the two matchers as they were before the one rule (the oracle) ----
function oldScopeAllows(scopes: readonly string[], hostname: string, namespace: string, registryHostname: string): boolean {
  const ownHost = registryHostname.toLowerCase();
  return scopes.some((scope) => {
    if (scope === '*') return true;
    const slash = scope.indexOf('/');
    if (slash === -1) return hostname === ownHost && namespace === scope;
    const host = scope.slice(0, slash);
    const ns = scope.slice(slash + 1);
    return hostname === host && (ns === '*' || ns === namespace);
  });
}
function oldPackageName(ref: PackageRef): string {
  return (ref.kind === 'provider' ? `${ref.namespace}/${ref.type}` : `${ref.namespace}/${ref.name}/${ref.system}`).toLowerCase();
}
function oldGlobMatches(pattern: string, name: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
    .join('[^/]*');
  return new RegExp(`^${source}$`).test(name);
}
function oldRightsAllow(rights: { namespaces: readonly string[]; packages: readonly string[] }, ref: PackageRef): boolean {
  const namespace = ref.namespace.toLowerCase();
  if (rights.namespaces.some((ns) => ns === '*' || ns === namespace)) return true;
  const name = oldPackageName(ref);
  const segments = name.split('/').length;
  return rights.packages.some((pattern) => pattern.split('/').length === segments && oldGlobMatches(pattern, name));
}

// ---- grids: grants as parseScope stores them, and places ----
const READ_SCOPES = ['*', 'acme', 'acme-evil', 'acm', 'acme_x', 'registry.terraform.io/hashicorp', 'registry.terraform.io/*', `${OWN}/acme`, `${OWN}/*`];
const HOSTS = [OWN, 'registry.terraform.io', 'registry.terraform.io.evil.example', 'terraform.io', 'evil.example'];
const NAMESPACES = ['acme', 'acme-evil', 'acm', 'acme_x', 'hashicorp', 'hashicorp2', 'other'];
const PACKAGE_PATTERNS = ['acme/thing', 'acme/thing-*', 'acme/*-thing', 'acme/vpc/aws', 'acme/vpc/*', 'acme/*vpc/aws', 'acme/net-*/a*', 'acme-evil/thing'];
const REFS: PackageRef[] = NAMESPACES.flatMap((namespace) => [
  ...['thing', 'thing-x', 'thing-', 'x-thing', 'thingx', 'vpc', 'other'].map((type) => ({ kind: 'provider' as const, namespace, type })),
  ...[
    ['vpc', 'aws'],
    ['vpc', 'gcp'],
    ['myvpc', 'aws'],
    ['net-a', 'aws'],
    ['net-a', 'gcp'],
    ['thing', 'aws'],
  ].map(([name, system]) => ({ kind: 'module' as const, namespace, name: name!, system: system! })),
]);

describe('old records keep their meaning', () => {
  it('every read scope, alone and in pairs, grants exactly the hosts and namespaces it granted before', () => {
    const sets = [...READ_SCOPES.map((s) => [s]), ...READ_SCOPES.flatMap((a) => READ_SCOPES.map((b) => [a, b])), []];
    let compared = 0;
    for (const scopes of sets)
      for (const hostname of HOSTS)
        for (const namespace of NAMESPACES) {
          expect(scopeGrants(scopes, 'read', { hostname, namespace }, OWN), `${scopes} → ${hostname}/${namespace}`).toBe(
            oldScopeAllows(scopes, hostname, namespace, OWN),
          );
          compared++;
        }
    expect(compared).toBeGreaterThan(3000);
  });

  it('every publish token record (per package, namespace-wide, stored before per-package rights) allows exactly what it allowed', () => {
    const records = [
      ...PACKAGE_PATTERNS.map((p) => ({ scopes: [p.split('/')[0]!], packages: [p] })),
      { scopes: ['acme'], packages: ['acme/thing', 'acme/vpc/*'] },
      { scopes: ['acme'], namespaceWide: true as const },
      { scopes: ['acme', 'other'], namespaceWide: true as const },
      { scopes: ['*'], namespaceWide: true as const },
      { scopes: ['acme'] }, // before per-package rights: publishes nothing
    ];
    for (const record of records)
      for (const ref of REFS) {
        const rights = tokenRights(record);
        expect(rightsAllow(rights, ref, OWN), `${JSON.stringify(record)} → ${oldPackageName(ref)}`).toBe(oldRightsAllow(rights, ref));
      }
  });

  it('every trusted publisher record with packages allows exactly what it allowed; one stored before rights allows nothing', () => {
    const publisher = (fields: Partial<TrustedPublisher>) =>
      ({ id: 'p', kind: 'github', issuer: 'https://token.actions.githubusercontent.com', ...fields }) as TrustedPublisher;
    for (const packages of [...PACKAGE_PATTERNS.map((p) => [p]), PACKAGE_PATTERNS])
      for (const ref of REFS) {
        const p = publisher({ packages });
        expect(rightsAllow(publisherRights(p, 'acme'), ref, OWN)).toBe(oldRightsAllow({ namespaces: [], packages }, ref));
      }
    for (const ref of REFS) expect(rightsAllow(publisherRights(publisher({}), 'acme'), ref, OWN)).toBe(false);
  });

  it("the one change: a namespace-wide trusted publisher allows every package of the namespace it is stored under, and no other namespace's", () => {
    // Before, its rights were namespaces ["*"]: every namespace, kept inside its own only by the caller's lookup.
    const p = { id: 'p', kind: 'github', issuer: 'https://token.actions.githubusercontent.com', namespaceWide: true } as TrustedPublisher;
    for (const ref of REFS) expect(rightsAllow(publisherRights(p, 'acme'), ref, OWN), oldPackageName(ref)).toBe(ref.namespace === 'acme');
  });
});

describe('hostile: a grant reaches whole parts only', () => {
  const ref = (namespace: string, type = 'thing'): PackageRef => ({ kind: 'provider', namespace, type });

  it('a grant for acme never reaches acme-evil, acm or acme_x, in any form', () => {
    for (const look of ['acme-evil', 'acm', 'acme_x', 'acmeacme', 'xacme']) {
      expect(scopeGrants(['acme', `${OWN}/acme`], 'read', { hostname: OWN, namespace: look }, OWN), look).toBe(false);
      expect(rightsAllow({ namespaces: ['acme'], packages: [] }, ref(look), OWN), look).toBe(false);
      expect(rightsAllow({ namespaces: [], packages: ['acme/thing', 'acme/thing-*', 'acme/vpc/*'] }, ref(look), OWN), look).toBe(false);
      expect(rightsAllow({ namespaces: [], packages: ['acme/vpc/*'] }, { kind: 'module', namespace: look, name: 'vpc', system: 'aws' }, OWN)).toBe(false);
    }
  });

  it('HOST/NS never reaches another host, nor this registry; a bare NS never reaches another host', () => {
    for (const hostname of ['registry.terraform.io.evil.example', 'evil-registry.terraform.io', 'terraform.io', 'registry.terraform.i', OWN]) {
      expect(scopeGrants(['registry.terraform.io/hashicorp', 'registry.terraform.io/*'], 'read', { hostname, namespace: 'hashicorp' }, OWN), hostname).toBe(
        false,
      );
    }
    expect(scopeGrants(['hashicorp'], 'read', { hostname: 'registry.terraform.io', namespace: 'hashicorp' }, OWN)).toBe(false);
    // A publish grant names packages of this registry only.
    expect(scopeGrants(['acme'], 'namespace', { hostname: 'registry.terraform.io', namespace: 'acme' }, OWN)).toBe(false);
    expect(scopeGrants(['acme/thing'], 'package', { hostname: 'evil.example', namespace: 'acme', package: ['thing'] }, OWN)).toBe(false);
  });

  it('patterns never widen: a package grant reaches neither a read, nor the other kind, nor a longer or shorter name', () => {
    const packages = ['acme/thing-*', 'acme/vpc/*'];
    expect(scopeGrants(packages, 'package', { hostname: OWN, namespace: 'acme' }, OWN)).toBe(false);
    expect(rightsAllow({ namespaces: [], packages: ['acme/vpc/*'] }, ref('acme', 'vpc'), OWN)).toBe(false);
    expect(rightsAllow({ namespaces: [], packages: ['acme/thing-*'] }, { kind: 'module', namespace: 'acme', name: 'thing-x', system: 'aws' }, OWN)).toBe(false);
    expect(rightsAllow({ namespaces: [], packages: ['acme/thing'] }, ref('acme', 'thing-x'), OWN)).toBe(false);
    expect(rightsAllow({ namespaces: [], packages: ['acme/thing'] }, ref('acme', 'thin'), OWN)).toBe(false);
    expect(rightsAllow({ namespaces: [], packages: ['acme/thing-*'] }, ref('acme', 'thing'), OWN)).toBe(false);
    // Regular-expression characters in a name are literal.
    expect(rightsAllow({ namespaces: [], packages: ['acme/t.ing'] }, ref('acme', 'thing'), OWN)).toBe(false);
  });

  it('a stored string that is not a grant of its form reaches nothing (never "everything")', () => {
    const place: Place = { hostname: OWN, namespace: 'acme', package: ['thing'] };
    for (const damaged of ['*/thing', '*/*', '', 'acme//thing', 'acme/thing/x/y']) expect(scopeGrants([damaged], 'package', place, OWN), damaged).toBe(false);
    for (const damaged of ['*/acme', '*/*', 'acme*', 'acme/thing', 'a/b/c', '', '/'])
      expect(scopeGrants([damaged], 'read', { hostname: OWN, namespace: 'acme' }, OWN), damaged).toBe(false);
    for (const damaged of ['acme/thing', 'acme*', `${OWN}/acme`, ''])
      expect(scopeGrants([damaged], 'namespace', { ...place, namespace: 'acmex' }, OWN), damaged).toBe(false);
  });

  it('requests are compared in lower case, as addresses are normalised', () => {
    expect(scopeGrants(['acme'], 'read', { hostname: 'Registry.Example.com', namespace: 'ACME' }, OWN)).toBe(true);
    expect(rightsAllow({ namespaces: [], packages: ['acme/thing-*'] }, ref('Acme', 'Thing-X'), OWN)).toBe(true);
    expect(packagePlace(ref('acme'), OWN)).toEqual({ hostname: OWN, namespace: 'acme', package: ['thing'] });
  });
});

describe('parseScope: one parse, three forms', () => {
  it('normalises each form', () => {
    expect(parseScope(' ACME ', 'namespace', '--publish')).toBe('acme');
    expect(parseScope('*', 'namespace', '--publish')).toBe('*');
    expect(parseScope(' Acme/Thing-* ', 'package', '--package')).toBe('acme/thing-*');
    expect(parseScope('acme/vpc/*', 'package', '--package')).toBe('acme/vpc/*');
  });

  it('refuses, naming the option: HOST/NS or a package as a namespace grant, a whole namespace or a namespace pattern as a package grant', () => {
    for (const bad of ['registry.terraform.io/hashicorp', 'acme/thing', 'a/b/c', 'ac me', 'acme*'])
      expect(() => parseScope(bad, 'namespace', '--publish'), bad).toThrow(expect.objectContaining({ name: 'InputError' }));
    expect(() => parseScope('acme/thing', 'namespace', '--publish')).toThrow('--publish "acme/thing" with --namespace-wide');
    for (const bad of ['acme', 'acme/*', 'acme/*/aws', '*/thing', 'ac me/thing', 'acme/th.ing', 'acme/a/b/c', '', 'acme/'])
      expect(() => parseScope(bad, 'package', '--package'), bad).toThrow(expect.objectContaining({ name: 'InputError' }));
    expect(() => parseScope('acme', 'package', '--package')).toThrow('add --namespace-wide');
  });
});
