import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenSha256 } from '../../src/access/tokens';
import { tokenKey } from '../../src/store/layout';
import { parseTokenRecord } from '../../src/store/tokens/read';
import { ensureDevVars } from '../../scripts/lib/dev/vars';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { type StoreHandle } from '../../scripts/lib/stores/handle';
import { createToken, formatTokenTable, listTokens, parseExpiry, revokeToken } from '../../scripts/lib/tokens';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

describe('parseExpiry', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('reads durations, dates and "never"', () => {
    expect(parseExpiry('90d', now)).toBe('2026-04-01T00:00:00.000Z');
    expect(parseExpiry('12h', now)).toBe('2026-01-01T12:00:00.000Z');
    expect(parseExpiry('2w', now)).toBe('2026-01-15T00:00:00.000Z');
    expect(parseExpiry('2027-01-31', now)).toBe('2027-01-31T00:00:00.000Z');
    expect(parseExpiry('never', now)).toBeNull();
  });
  it('a token expires after 90 days unless --expires says otherwise ("never" only when said)', () => {
    expect(parseExpiry(undefined, now)).toBe('2026-04-01T00:00:00.000Z');
  });
  it('refuses other text and times not in the future', () => {
    for (const bad of ['soon', '5x', '-1d', '0d', '2025-12-31', '2026-13-45', '']) {
      expect(() => parseExpiry(bad, now), bad).toThrow(/--expires/);
    }
  });
});

describe('token commands on the local state', () => {
  let dir: string;
  let store: StoreHandle;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'edge-registry-token-'));
    store = await openLocalStore({ localPersistRoot: join(dir, 'v3'), kvNamespaceId: 'edge-registry-local', bucketName: 'edge-registry' });
  });
  afterAll(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('create stores only the hash, with normalised scopes, name, creation and expiry', async () => {
    const { token, record } = await createToken(store.kv, {
      scopes: ['Acme', 'registry.terraform.io/HashiCorp', 'acme'],
      name: 'ci',
      expires: '2030-01-01T00:00:00.000Z',
    });
    expect(token).toMatch(/^ert_[A-Za-z0-9_-]{43}$/);
    const stored = await store.kv.get(tokenKey(tokenSha256(token)), 'text');
    expect(stored).not.toBeNull();
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(token.slice(4));
    expect(parseTokenRecord(stored!)).toEqual(record);
    expect(record.scopes).toEqual(['acme', 'registry.terraform.io/hashicorp']);
    expect(record).toMatchObject({ name: 'ci', expires: '2030-01-01T00:00:00.000Z', id: tokenSha256(token).slice(0, 12) });
  });

  it('create refuses no scope and invalid scopes', async () => {
    await expect(createToken(store.kv, { scopes: [], expires: null })).rejects.toThrow(/--namespace/);
    const before = (await store.kv.list({ prefix: '' })).keys.length;
    for (const [bad, message] of [
      ['bad.ns', 'namespace "bad.ns" is invalid'],
      ['-x', 'namespace "-x" is invalid'],
      ['a/b/c', 'scope "a/b/c" must be "*", NAMESPACE, HOST/NAMESPACE or HOST/*'],
      ['not a host/acme', 'hostname "not a host" is not a valid registry hostname'],
      ['', 'namespace is empty'],
      ['acme*', 'namespace "acme*" is invalid'],
    ]) {
      await expect(createToken(store.kv, { scopes: [bad!], expires: null }), bad).rejects.toMatchObject({
        name: 'InputError',
        message: expect.stringContaining(message!),
      });
    }
    expect((await store.kv.list({ prefix: '' })).keys).toHaveLength(before);
  });

  it('a publish token names its packages; a whole namespace only with namespaceWide (--namespace-wide), listed as such', async () => {
    const { record } = await createToken(store.kv, { scopes: ['Acme/Thing', 'acme/vpc/aws', 'acme/thing'], purpose: 'publish', expires: null });
    expect(record).toMatchObject({ purpose: 'publish', scopes: ['acme'], packages: ['acme/thing', 'acme/vpc/aws'] });
    expect(record).not.toHaveProperty('namespaceWide');
    const wide = await createToken(store.kv, { scopes: ['acme'], purpose: 'publish', namespaceWide: true, expires: null });
    expect(wide.record).toMatchObject({ scopes: ['acme'], namespaceWide: true });
    expect(wide.record).not.toHaveProperty('packages');
    const before = (await store.kv.list({ prefix: '' })).keys.length;
    await expect(createToken(store.kv, { scopes: ['acme'], purpose: 'publish', expires: null })).rejects.toThrow(/--publish "acme" must name a package/);
    await expect(createToken(store.kv, { scopes: ['acme/*'], purpose: 'publish', expires: null })).rejects.toThrow(/every provider of acme.*--namespace-wide/);
    await expect(createToken(store.kv, { scopes: ['*/thing'], purpose: 'publish', expires: null })).rejects.toThrow(/namespace cannot be a pattern/);
    await expect(createToken(store.kv, { scopes: ['acme/thing'], purpose: 'publish', namespaceWide: true, expires: null })).rejects.toThrow(
      /--namespace-wide: give namespaces/,
    );
    await expect(createToken(store.kv, { scopes: ['acme'], namespaceWide: true, expires: null })).rejects.toThrow(/--namespace-wide is for publish tokens/);
    expect((await store.kv.list({ prefix: '' })).keys).toHaveLength(before);
    const table = formatTokenTable([record, wide.record]);
    expect(table).toContain('publish:acme/thing,acme/vpc/aws');
    expect(table).toContain('publish:NAMESPACE-WIDE acme');
  });

  it('list shows id, name, scopes and expiry, never a token or hash', async () => {
    const { token, record } = await createToken(store.kv, { scopes: ['*'], name: 'everything', expires: null });
    const table = formatTokenTable(await listTokens(store.kv));
    expect(table).toContain(record.id);
    expect(table).toContain('everything');
    expect(table).toMatch(/everything\s+\*\s+.*never/);
    expect(table).not.toContain(token);
    expect(table).not.toContain(record.sha256);
  });

  it('revoke by id or name; an ambiguous name asks for the id', async () => {
    const a = await createToken(store.kv, { scopes: ['acme'], name: 'twin', expires: null });
    const b = await createToken(store.kv, { scopes: ['acme'], name: 'twin', expires: null });
    await expect(revokeToken(store.kv, 'twin')).rejects.toThrow(/2 tokens match/);
    expect((await revokeToken(store.kv, a.record.id)).sha256).toBe(a.record.sha256);
    expect((await revokeToken(store.kv, 'twin')).sha256).toBe(b.record.sha256);
    expect(await store.kv.get(tokenKey(a.record.sha256), 'text')).toBeNull();
    await expect(revokeToken(store.kv, 'twin')).rejects.toThrow(/no token/);
  });
});

describe('npm run token (the CLI)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'edge-registry-token-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const token = (...args: string[]) => run(tsx, ['scripts/token.ts', ...args, '--persist-to', dir], { cwd: root });

  it('create without --expires makes a token that expires in 90 days, and says so', async () => {
    const created = await token('create', '--publish', 'acme/thing', '--name', 'default-expiry');
    const expires = /expires: (\S+)/.exec(created.stdout)?.[1];
    expect(Date.parse(expires!) - Date.now()).toBeGreaterThan(89 * 86_400_000);
    expect(Date.parse(expires!) - Date.now()).toBeLessThanOrEqual(90 * 86_400_000);
    expect(created.stdout).toContain('may:     publish packages acme/thing');
  });

  it('create prints the token once, as the last line of stdout; list and revoke never print it', async () => {
    const created = await token('create', '--namespace', 'acme', '--namespace', '*', '--expires', '30d', '--name', 'cli-test');
    const lines = created.stdout.trimEnd().split('\n');
    const secret = lines.at(-1)!;
    expect(secret).toMatch(/^ert_[A-Za-z0-9_-]{43}$/);
    expect(created.stdout.split(secret)).toHaveLength(2);
    expect(created.stdout).toContain('TF_TOKEN_registry_example_com');
    expect(created.stderr).not.toContain(secret);
    const listed = await token('list');
    expect(listed.stdout).toContain('cli-test');
    expect(listed.stdout).not.toContain(secret);
    const revoked = await token('revoke', 'cli-test');
    expect(revoked.stdout).toMatch(/^revoked token [0-9a-f]{12} \(cli-test\)/);
    expect((await token('list')).stdout).not.toContain('cli-test');
  });

  it('exits 1 for bad input and 2 with the usage for bad arguments, with one "error:" line and no stack trace', async () => {
    // Independent runs, so in parallel: each is a process start.
    const cases: [string[], number][] = [
      [['create'], 1],
      [['create', '--namespace', 'Bad.NS'], 1],
      [['create', '--publish', 'acme'], 1],
      [['create', '--publish', 'acme/*'], 1],
      [['revoke'], 2],
      [['rotate'], 2],
      [['list', '--namespace', 'x'], 2],
      [[], 2],
      [['list', '--bogus'], 2],
    ];
    const failures = await Promise.all(
      cases.map(([args]) =>
        token(...args).then(
          () => null,
          (error: { code: number; stderr: string }) => error,
        ),
      ),
    );
    cases.forEach(([args, code], i) => {
      expect(failures[i]?.code, args.join(' ')).toBe(code);
      expect(failures[i]?.stderr, args.join(' ')).toMatch(/^error: /);
      expect(failures[i]?.stderr).not.toMatch(/\n\s+at /);
      if (code === 2) expect(failures[i]?.stderr).toMatch(/usage:\n  npm run token/);
    });
  });
});

describe('ensureDevVars', () => {
  it('creates .dev.vars with a secret (mode 0600) once, and keeps other lines', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'edge-registry-devvars-'));
    try {
      expect(ensureDevVars(dir)).toBe(true);
      const first = await readFile(join(dir, '.dev.vars'), 'utf8');
      expect(first).toMatch(/^URL_SIGNING_SECRET=[A-Za-z0-9_-]{43}$/m);
      expect((await stat(join(dir, '.dev.vars'))).mode & 0o777).toBe(0o600);
      expect(ensureDevVars(dir)).toBe(false);
      expect(await readFile(join(dir, '.dev.vars'), 'utf8')).toBe(first);

      await writeFile(join(dir, '.dev.vars'), 'OTHER=1');
      expect(ensureDevVars(dir)).toBe(true);
      expect(await readFile(join(dir, '.dev.vars'), 'utf8')).toMatch(/^OTHER=1\nURL_SIGNING_SECRET=\S+\n$/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
