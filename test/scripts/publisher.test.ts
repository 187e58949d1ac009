import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePublisherInput, refMatches, unpinnedReason, type PublisherInput } from '../../src/access/publishers';
import { legacyPublishersKey, publishersObject } from '../../src/store/layout';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { type StoreHandle } from '../../scripts/lib/stores/handle';
import { addPublisher, listPublishers, pinPublisher, removePublisher, resolvePublisherIds } from '../../scripts/lib/publishers';
import { readRegistryConfig } from '../../scripts/lib/config';
import { listAuditEntries } from '../../src/store/audit/read';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const GITHUB = 'https://token.actions.githubusercontent.com';
const IDS = { repositoryId: '123456', ownerId: '654321' };
const GL_IDS = { projectId: '4242', namespaceId: '42' };
const RIGHTS = { packages: ['acme/thing'] };

describe('parsePublisherInput', () => {
  it('accepts GitHub and GitLab publishers in canonical form, with a stable id', async () => {
    const github = await parsePublisherInput({
      issuer: `${GITHUB}/`,
      repository: 'Acme/terraform-provider-thing',
      workflow: '.github/workflows/release.yml',
      ref: 'refs/tags/v*',
      environment: 'release',
      ...IDS,
      ...RIGHTS,
    });
    expect(github).toMatchObject({
      kind: 'github',
      issuer: GITHUB,
      repository: 'Acme/terraform-provider-thing',
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      environment: 'release',
      ...IDS,
      ...RIGHTS,
    });
    expect(github.id).toMatch(/^[0-9a-f]{12}$/);
    // Same matching fields (repository case aside) → same id; another ref or other ids → another id.
    expect(
      (
        await parsePublisherInput({
          issuer: GITHUB,
          repository: 'acme/terraform-provider-thing',
          workflow: 'release.yml',
          ref: 'refs/tags/v*',
          environment: 'release',
          ...IDS,
          ...RIGHTS,
        })
      ).id,
    ).toBe(github.id);
    expect(
      (
        await parsePublisherInput({
          issuer: GITHUB,
          repository: 'acme/terraform-provider-thing',
          workflow: 'release.yml',
          ref: 'refs/heads/main',
          environment: 'release',
          ...IDS,
          ...RIGHTS,
        })
      ).id,
    ).not.toBe(github.id);
    expect(
      (
        await parsePublisherInput({
          issuer: GITHUB,
          repository: 'acme/terraform-provider-thing',
          workflow: 'release.yml',
          ref: 'refs/tags/v*',
          environment: 'release',
          repositoryId: '9',
          ownerId: '654321',
          ...RIGHTS,
        })
      ).id,
    ).not.toBe(github.id);
    const gitlab = await parsePublisherInput({ issuer: 'https://gitlab.com', projectPath: 'group/sub/project', ref: 'refs/tags/v*', ...GL_IDS, ...RIGHTS });
    expect(gitlab).toMatchObject({ kind: 'gitlab', issuer: 'https://gitlab.com', projectPath: 'group/sub/project', ref: 'refs/tags/v*', ...GL_IDS, ...RIGHTS });
    expect(gitlab).not.toHaveProperty('allowUnprotectedRef');
    expect(
      await parsePublisherInput({ issuer: 'http://127.0.0.1:8080/issuer', repository: 'a/b', workflow: 'r.yml', environment: 'release', ...IDS, ...RIGHTS }),
    ).toMatchObject({ issuer: 'http://127.0.0.1:8080/issuer' });
    expect(await parsePublisherInput({ issuer: GITHUB, repository: 'a/b', workflow: 'r.yml', anyRef: true, ...IDS, ...RIGHTS })).toMatchObject({
      anyRef: true,
    });
    expect(
      await parsePublisherInput({
        issuer: GITHUB,
        repository: 'a/b',
        workflow: 'acme/shared/.github/workflows/build.yml@refs/heads/main',
        environment: 'e',
        ...IDS,
        ...RIGHTS,
      }),
    ).toMatchObject({ workflow: 'acme/shared/.github/workflows/build.yml@refs/heads/main' });
  });

  it.each<[string, PublisherInput, RegExp]>([
    ['no issuer', { repository: 'a/b' }, /--issuer is required/],
    ['http issuer off loopback', { issuer: 'http://gitlab.example.com', projectPath: 'a/b' }, /must use https/],
    ['ftp issuer', { issuer: 'ftp://gitlab.example.com', projectPath: 'a/b' }, /must be an https URL/],
    ['issuer with credentials', { issuer: 'https://user:pw@gitlab.example.com', projectPath: 'a/b' }, /user name or password/],
    ['issuer with a query', { issuer: 'https://gitlab.example.com/?x=1', projectPath: 'a/b' }, /query or fragment/],
    ['not a URL', { issuer: 'token.actions.githubusercontent.com', repository: 'a/b' }, /is not a URL/],
    ['neither repository nor project', { issuer: GITHUB }, /exactly one of --repository/],
    ['both', { issuer: 'https://ci.example.com', repository: 'a/b', projectPath: 'a/b' }, /exactly one of --repository/],
    ['repository without owner', { issuer: GITHUB, repository: 'thing' }, /--repository "thing" must be OWNER\/REPO/],
    ['repository with three parts', { issuer: GITHUB, repository: 'a/b/c' }, /must be OWNER\/REPO/],
    ['repository with a space', { issuer: GITHUB, repository: 'acme/my thing' }, /must be OWNER\/REPO/],
    ['project path of one segment', { issuer: 'https://gitlab.com', projectPath: 'project' }, /--project-path "project" must be GROUP\/PROJECT/],
    ['GitLab path for GitHub', { issuer: GITHUB, projectPath: 'a/b' }, /--project-path is for GitLab/],
    ['GitHub repository for gitlab.com', { issuer: 'https://gitlab.com', repository: 'a/b' }, /--repository is for GitHub/],
    ['workflow for GitLab', { issuer: 'https://gitlab.com', projectPath: 'a/b', workflow: 'release.yml' }, /--workflow is for GitHub/],
    ['workflow that is a path', { issuer: GITHUB, repository: 'a/b', workflow: '../x.yml' }, /--workflow "..\/x.yml" must be a file name/],
    ['workflow not yaml', { issuer: GITHUB, repository: 'a/b', workflow: 'release' }, /must be a file name/],
    ['GitHub without --workflow', { issuer: GITHUB, repository: 'a/b', ref: 'refs/tags/v*', ...IDS }, /--workflow FILE.yml is required for GitHub publishers/],
    ['neither --ref nor --environment', { issuer: GITHUB, repository: 'a/b', workflow: 'r.yml', ...IDS }, /give --ref .* or --environment NAME.*--any-ref/],
    ['GitLab with neither --ref nor --environment', { issuer: 'https://gitlab.com', projectPath: 'a/b', ...GL_IDS }, /give --ref/],
    ['GitHub without ids', { issuer: GITHUB, repository: 'a/b', workflow: 'r.yml', ref: 'refs/tags/v*' }, /--repository-id is required/],
    ['GitHub without owner id', { issuer: GITHUB, repository: 'a/b', workflow: 'r.yml', ref: 'refs/tags/v*', repositoryId: '1' }, /--owner-id is required/],
    ['GitLab without ids', { issuer: 'https://gitlab.com', projectPath: 'a/b', ref: 'refs/tags/v*' }, /--project-id is required/],
    ['GitLab without namespace id', { issuer: 'https://gitlab.com', projectPath: 'a/b', ref: 'refs/tags/v*', projectId: '1' }, /--namespace-id is required/],
    [
      'a non-numeric id',
      { issuer: GITHUB, repository: 'a/b', workflow: 'r.yml', ref: 'refs/tags/v*', repositoryId: 'acme', ownerId: '1' },
      /--repository-id "acme" must be/,
    ],
    [
      'GitLab ids for GitHub',
      { issuer: GITHUB, repository: 'a/b', workflow: 'r.yml', ref: 'refs/tags/v*', ...GL_IDS },
      /--project-id and --namespace-id are for GitLab/,
    ],
    [
      'GitHub ids for GitLab',
      { issuer: 'https://gitlab.com', projectPath: 'a/b', ref: 'refs/tags/v*', ...IDS },
      /--repository-id and --owner-id are for GitHub/,
    ],
    [
      '--allow-unprotected-ref for GitHub',
      { issuer: GITHUB, repository: 'a/b', workflow: 'r.yml', ref: 'refs/tags/v*', allowUnprotectedRef: true, ...IDS },
      /--allow-unprotected-ref is for GitLab/,
    ],
    ['short ref', { issuer: GITHUB, repository: 'a/b', ref: 'v*' }, /--ref "v\*" must be a full git ref/],
    ['ref with ..', { issuer: GITHUB, repository: 'a/b', ref: 'refs/tags/../heads/x' }, /must be a full git ref/],
    ['ref with a space', { issuer: GITHUB, repository: 'a/b', ref: 'refs/tags/v 1' }, /must be a full git ref/],
    ['empty environment', { issuer: GITHUB, repository: 'a/b', environment: '' }, /--environment/],
    ['environment with a newline', { issuer: GITHUB, repository: 'a/b', environment: 'a\nb' }, /--environment/],
  ])('refuses %s', async (_, input, message) => {
    await expect(parsePublisherInput(input)).rejects.toMatchObject({ name: 'InputError', message: expect.stringMatching(message) });
  });

  it('ref patterns: * matches any run of characters, everything else is literal', () => {
    expect(refMatches('refs/tags/v*', 'refs/tags/v1.2.3')).toBe(true);
    expect(refMatches('refs/tags/v*', 'refs/heads/v1.2.3')).toBe(false);
    expect(refMatches('refs/tags/v*', 'refs/tags/x-v1')).toBe(false);
    expect(refMatches('refs/heads/main', 'refs/heads/main')).toBe(true);
    expect(refMatches('refs/heads/main', 'refs/heads/main2')).toBe(false);
    expect(refMatches('refs/tags/v1.*', 'refs/tags/v1x2')).toBe(false);
    expect(refMatches('refs/tags/v*.0', 'refs/tags/v1.2.0')).toBe(true);
  });
});

describe('publisher commands on the local state', () => {
  let dir: string;
  let store: StoreHandle;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'edge-registry-publisher-'));
    store = await openLocalStore({ localPersistRoot: join(dir, 'v3'), kvNamespaceId: 'edge-registry-local', bucketName: 'edge-registry' });
  });
  afterAll(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('add stores the publisher once per namespace (a second add with other packages changes them); list shows it; remove deletes it', async () => {
    const input = { issuer: GITHUB, repository: 'acme/terraform-provider-thing', workflow: 'release.yml', ref: 'refs/tags/v*', ...IDS, ...RIGHTS };
    const first = await addPublisher(store, 'registry.example.com', 'acme', input);
    expect(first).toMatchObject({ added: true, publisher: { packages: ['acme/thing'] } });
    expect(await addPublisher(store, 'registry.example.com', 'acme', input)).toEqual({ publisher: first.publisher, added: false, updated: false });
    const widened = await addPublisher(store, 'registry.example.com', 'acme', { ...input, packages: ['acme/thing', 'acme/vpc/aws'] });
    expect(widened).toMatchObject({ added: false, updated: true, publisher: { id: first.publisher.id, packages: ['acme/thing', 'acme/vpc/aws'] } });
    expect(await listPublishers(store, 'registry.example.com', 'acme')).toEqual([widened.publisher]);
    expect(await listPublishers(store, 'registry.example.com', 'other')).toEqual([]);
    await expect(removePublisher(store, 'registry.example.com', 'acme', '000000000000')).rejects.toThrow(/has no trusted publisher 000000000000/);
    await expect(removePublisher(store, 'registry.example.com', 'acme', 'nope')).rejects.toThrow(/12 hex digits/);
    expect(await removePublisher(store, 'registry.example.com', 'acme', first.publisher.id.toUpperCase())).toEqual(widened.publisher);
    expect(JSON.parse(await (await store.blobs.get(publishersObject('registry.example.com', 'acme')))!.text())).toEqual([]);
  });

  it('bad input writes nothing: no packages, a package of another namespace, a namespace-wide pattern', async () => {
    const before = (await store.kv.list({ prefix: '' })).keys.length;
    const objects = (await store.blobs.list({ prefix: '' })).objects.length;
    await expect(addPublisher(store, 'registry.example.com', 'acme', { issuer: 'http://ci.example.com', repository: 'a/b' })).rejects.toThrow(/https/);
    // Bad input is refused before any lookup is sent (the API here does not exist).
    await expect(
      addPublisher(store, 'registry.example.com', 'acme', { issuer: GITHUB, repository: 'a/b', ref: 'refs/tags/v*' }, { api: 'http://127.0.0.1:9' }),
    ).rejects.toThrow(/--workflow FILE.yml is required/);
    const input = { issuer: GITHUB, repository: 'a/b', workflow: 'r.yml', ref: 'refs/tags/v*', ...IDS };
    await expect(addPublisher(store, 'registry.example.com', 'acme', input)).rejects.toThrow(/give --package NS\/TYPE .*--namespace-wide/);
    await expect(addPublisher(store, 'registry.example.com', 'acme', { ...input, packages: ['other/thing'] })).rejects.toThrow(/not in namespace acme/);
    await expect(addPublisher(store, 'registry.example.com', 'acme', { ...input, packages: ['acme/*'] })).rejects.toThrow(
      /every provider of acme.*--namespace-wide/,
    );
    await expect(addPublisher(store, 'registry.example.com', 'acme', { ...input, packages: ['acme/thing'], namespaceWide: true })).rejects.toThrow(/not both/);
    expect((await store.kv.list({ prefix: '' })).keys).toHaveLength(before);
    expect((await store.blobs.list({ prefix: '' })).objects).toHaveLength(objects);
  });

  it('a list stored in KV before publishers moved to R2 is read, and moved by the next change', async () => {
    const legacy = [{ id: '0123456789ab', kind: 'github', issuer: GITHUB, repository: 'acme/legacy', created: '2026-01-01T00:00:00.000Z' }];
    await store.kv.put(legacyPublishersKey('registry.example.com', 'moved'), JSON.stringify(legacy));
    expect(await listPublishers(store, 'registry.example.com', 'moved')).toMatchObject(legacy);
    const input = { issuer: GITHUB, repository: 'acme/new', workflow: 'r.yml', ref: 'refs/tags/v*', ...IDS, packages: ['moved/thing'] };
    await addPublisher(store, 'registry.example.com', 'moved', input);
    expect(await store.kv.get(legacyPublishersKey('registry.example.com', 'moved'), 'text')).toBeNull();
    expect((await listPublishers(store, 'registry.example.com', 'moved')).map((p) => p.id)[0]).toBe('0123456789ab');
  });

  it('changes race safely: a remove racing adds never brings the removed publisher back; a pin racing a remove, one of them wins whole', async () => {
    const base = { issuer: GITHUB, workflow: 'r.yml', ref: 'refs/tags/v*', ...IDS };
    for (let round = 0; round < 5; round++) {
      const ns = `race${round}`;
      const victim = await addPublisher(store, 'registry.example.com', ns, { ...base, repository: 'acme/victim', packages: [`${ns}/victim`] });
      const results = await Promise.allSettled([
        removePublisher(store, 'registry.example.com', ns, victim.publisher.id),
        addPublisher(store, 'registry.example.com', ns, { ...base, repository: 'acme/a', packages: [`${ns}/a`] }),
        addPublisher(store, 'registry.example.com', ns, { ...base, repository: 'acme/b', packages: [`${ns}/b`] }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
      expect((await listPublishers(store, 'registry.example.com', ns)).map((p) => ('repository' in p ? p.repository : p.projectPath)).sort()).toEqual([
        'acme/a',
        'acme/b',
      ]);

      const legacy = { id: 'abcdefabcdef', kind: 'github', issuer: GITHUB, repository: 'acme/legacy', created: '2026-01-01T00:00:00.000Z' };
      await store.kv.put(legacyPublishersKey('registry.example.com', `pin${round}`), JSON.stringify([legacy]));
      const [pinned, removed] = await Promise.allSettled([
        pinPublisher(store, 'registry.example.com', `pin${round}`, legacy.id, { ...IDS, workflow: 'r.yml', ref: 'refs/tags/v*', packages: [`pin${round}/x`] }),
        removePublisher(store, 'registry.example.com', `pin${round}`, legacy.id),
      ]);
      const after = await listPublishers(store, 'registry.example.com', `pin${round}`);
      // Removed first: the pin is refused and nothing comes back. Pinned first: the remove finds no such id, and the pinned one stays.
      if (removed.status === 'fulfilled') {
        expect(pinned.status).toBe('rejected');
        expect(after).toEqual([]);
      } else {
        expect(pinned.status).toBe('fulfilled');
        expect(after.map((p) => ('repository' in p ? p.repository : p.projectPath))).toEqual(['acme/legacy']);
        expect(unpinnedReason(after[0]!)).toBeNull();
      }
    }
  });

  it('pin completes a publisher stored without ids, workflow, ref or packages (it published nothing before); nothing else is changed', async () => {
    const legacy = { id: 'abcdefabcdef', kind: 'github', issuer: GITHUB, repository: 'acme/terraform-provider-thing', created: '2026-01-01T00:00:00.000Z' };
    await store.kv.put(legacyPublishersKey('registry.example.com', 'pinned'), JSON.stringify([legacy]));
    await expect(pinPublisher(store, 'registry.example.com', 'pinned', legacy.id, { ...IDS, ref: 'refs/tags/v*', packages: ['pinned/thing'] })).rejects.toThrow(
      /--workflow FILE.yml is required/,
    );
    await expect(pinPublisher(store, 'registry.example.com', 'pinned', legacy.id, { ...IDS, workflow: 'release.yml', ref: 'refs/tags/v*' })).rejects.toThrow(
      /give --package/,
    );
    expect(await store.kv.get(legacyPublishersKey('registry.example.com', 'pinned'), 'text')).not.toBeNull();
    const { publisher } = await pinPublisher(store, 'registry.example.com', 'pinned', legacy.id, {
      ...IDS,
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      packages: ['pinned/thing'],
    });
    expect(publisher).toMatchObject({
      repository: 'acme/terraform-provider-thing',
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      ...IDS,
      packages: ['pinned/thing'],
    });
    expect(await listPublishers(store, 'registry.example.com', 'pinned')).toEqual([publisher]);
    await expect(pinPublisher(store, 'registry.example.com', 'pinned', publisher.id, {})).rejects.toThrow(/already pinned/);
  });
});

describe('npm run publisher (the CLI)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'edge-registry-publisher-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const publisher = (...args: string[]) => run(tsx, ['scripts/publisher.ts', ...args, '--persist-to', dir], { cwd: root });

  it('add, list --json, remove', async () => {
    const added = await publisher(
      'add',
      '--namespace',
      'acme',
      '--issuer',
      GITHUB,
      '--repository',
      'acme/terraform-provider-thing',
      '--workflow',
      'release.yml',
      '--ref',
      'refs/tags/v*',
      '--environment',
      'release',
      '--repository-id',
      '123456',
      '--owner-id',
      '654321',
      '--package',
      'acme/thing',
      '--json',
    );
    const { publisher: created } = JSON.parse(added.stdout) as { publisher: { id: string } };
    expect(added.stderr).toContain(`trusted publisher added to registry.example.com/acme`);
    await publisher(
      'add',
      '--namespace',
      'acme',
      '--issuer',
      'https://gitlab.com',
      '--project-path',
      'acme/modules/vpc',
      '--ref',
      'refs/tags/v*',
      '--project-id',
      '4242',
      '--namespace-id',
      '42',
      '--package',
      'acme/vpc/aws',
    );
    const listed = JSON.parse((await publisher('list', '--namespace', 'acme', '--json')).stdout) as { publishers: { kind: string }[] };
    expect(listed.publishers.map((p) => p.kind)).toEqual(['github', 'gitlab']);
    const text = (await publisher('list', '--namespace', 'acme')).stdout;
    expect(text).toContain(
      `${created.id}  github  ${GITHUB}  acme/terraform-provider-thing (id 123456, owner id 654321) workflow release.yml  ref refs/tags/v*  environment release`,
    );
    expect(text).toContain('acme/modules/vpc (id 4242, namespace id 42)');
    expect(text).toContain('environment release  packages acme/thing');
    expect(text).toContain('packages acme/vpc/aws');
    expect((await publisher('remove', '--namespace', 'acme', created.id)).stderr).toContain(`removed trusted publisher ${created.id}`);
    expect((await publisher('list', '--namespace', 'acme')).stdout).not.toContain(created.id);

    // Every add and remove left an audit entry naming the operator and the publisher.
    const store = await openLocalStore(await readRegistryConfig({ configPath: join(root, 'wrangler.toml'), persistTo: dir }));
    try {
      const { entries } = await listAuditEntries(store, { namespace: 'acme' });
      expect(entries.map((e) => [e.action, e.outcome, e.target, e.actor.kind])).toEqual([
        ['publisher.add', 'ok', 'registry.example.com/acme', 'operator'],
        ['publisher.add', 'ok', 'registry.example.com/acme', 'operator'],
        ['publisher.remove', 'ok', 'registry.example.com/acme', 'operator'],
      ]);
      expect(entries[0]!.reason).toContain('acme/terraform-provider-thing (id 123456, owner id 654321) workflow release.yml ref refs/tags/v*');
      expect(entries[2]!.reason).toContain(created.id);
    } finally {
      await store.close();
    }
  });

  it('exits 1 for bad input and 2 with the usage for bad arguments, one "error:" line, no stack trace', async () => {
    const cases: [string[], number][] = [
      [['add', '--namespace', 'acme', '--issuer', 'http://ci.example.com', '--repository', 'a/b'], 1],
      [['add', '--namespace', 'Bad.NS', '--issuer', GITHUB, '--repository', 'a/b'], 1],
      [['add', '--namespace', 'acme', '--issuer', GITHUB], 1],
      // Offline (no API answers) and no ids: refused, naming the flags.
      [
        [
          'add',
          '--namespace',
          'acme',
          '--issuer',
          GITHUB,
          '--repository',
          'a/b',
          '--workflow',
          'r.yml',
          '--ref',
          'refs/tags/v*',
          '--package',
          'acme/b',
          '--api',
          'http://127.0.0.1:9',
        ],
        1,
      ],
      [['remove', '--namespace', 'acme', 'abcdefabcdef'], 1],
      [['add', '--issuer', GITHUB, '--repository', 'a/b'], 2],
      [['list', '--namespace', 'acme', '--repository', 'a/b'], 2],
      [['remove', '--namespace', 'acme'], 2],
      [['rotate', '--namespace', 'acme'], 2],
      [['list', '--namespace', 'acme', '--bogus'], 2],
    ];
    const failures = await Promise.all(
      cases.map(([args]) =>
        publisher(...args).then(
          () => null,
          (error: { code: number; stderr: string }) => error,
        ),
      ),
    );
    cases.forEach(([args, code], i) => {
      expect(failures[i]?.code, args.join(' ')).toBe(code);
      expect(failures[i]?.stderr, args.join(' ')).toMatch(/^error: /);
      expect(failures[i]?.stderr).not.toMatch(/\n\s+at /);
      if (code === 2) expect(failures[i]?.stderr).toContain('usage: npm run publisher');
    });
    // A refused add or remove is in the audit log as refused, with the reason.
    const store = await openLocalStore(await readRegistryConfig({ configPath: join(root, 'wrangler.toml'), persistTo: dir }));
    try {
      const refused = (await listAuditEntries(store, { namespace: 'acme' })).entries.filter((e) => e.outcome === 'refused');
      expect(refused.map((e) => e.action).sort()).toEqual(['publisher.add', 'publisher.add', 'publisher.add', 'publisher.remove']);
      expect(refused.map((e) => e.reason).join('\n')).toMatch(
        /could not look up a\/b's ids at http:\/\/127\.0\.0\.1:9\/repos\/a\/b .*give --repository-id N --owner-id N/,
      );
      expect(refused.map((e) => e.reason).join('\n')).toMatch(
        /must use https[\s\S]*exactly one of --repository|exactly one of --repository[\s\S]*must use https/,
      );
    } finally {
      await store.close();
    }
  });
});

describe("looking the ids up from the CI's API (a local HTTP server standing in for GitHub's and GitLab's REST APIs)", () => {
  let server: Server;
  let api: string;
  const seen: { url: string; authorization?: string }[] = [];
  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push({ url: request.url ?? '', authorization: request.headers.authorization });
      const send = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (request.url === '/repos/acme/terraform-provider-thing')
        return send(200, { id: 123456, full_name: 'acme/terraform-provider-thing', owner: { id: 654321, login: 'acme' } });
      if (request.url === '/repos/acme/old-name') return send(200, { id: 1, full_name: 'acme/new-name', owner: { id: 2 } });
      if (request.url === '/api/v4/projects/acme%2Fmodules%2Fvpc')
        return send(200, { id: 4242, path_with_namespace: 'acme/modules/vpc', namespace: { id: 42, full_path: 'acme/modules' } });
      return send(404, { message: 'Not Found' });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('GitHub: GET API/repos/OWNER/REPO → id, owner.id (GITHUB_TOKEN sent when set)', async () => {
    const input = { issuer: GITHUB, repository: 'acme/terraform-provider-thing', workflow: 'release.yml', ref: 'refs/tags/v*' };
    expect(await resolvePublisherIds(input, { api, env: { GITHUB_TOKEN: 'ghp_test' } })).toMatchObject(IDS);
    expect(seen.at(-1)).toEqual({ url: '/repos/acme/terraform-provider-thing', authorization: 'Bearer ghp_test' });
    // Given ids are used as given: nothing is fetched.
    const before = seen.length;
    expect(await resolvePublisherIds({ ...input, repositoryId: '7', ownerId: '8' }, { api })).toMatchObject({ repositoryId: '7', ownerId: '8' });
    expect(seen.length).toBe(before);
  });

  it('GitLab: GET API/projects/URL-ENCODED-PATH → id, namespace.id (a self-managed instance: --api)', async () => {
    const input = { issuer: 'https://gitlab.example.com', projectPath: 'acme/modules/vpc', ref: 'refs/tags/v*' };
    expect(await resolvePublisherIds(input, { api: `${api}/api/v4` })).toMatchObject(GL_IDS);
  });

  it('refuses, naming the flags: unknown repository, a renamed one, one of a pair, an unreachable API', async () => {
    const input = { issuer: GITHUB, repository: 'acme/missing', workflow: 'release.yml', ref: 'refs/tags/v*' };
    await expect(resolvePublisherIds(input, { api })).rejects.toThrow(/answered 404 \(private\? set GITHUB_TOKEN\); give --repository-id N --owner-id N/);
    await expect(resolvePublisherIds({ ...input, repository: 'acme/old-name' }, { api })).rejects.toThrow(/acme\/old-name is now acme\/new-name/);
    await expect(resolvePublisherIds({ ...input, repositoryId: '1' }, { api })).rejects.toThrow(/give both --repository-id and --owner-id/);
    await expect(resolvePublisherIds({ issuer: 'https://gitlab.com', projectPath: 'a/b' }, { api: 'http://127.0.0.1:9' })).rejects.toThrow(
      /give --project-id N --namespace-id N/,
    );
  });

  it('the CLI looks them up (--api) and list shows them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'edge-registry-publisher-lookup-'));
    try {
      const added = await run(
        tsx,
        [
          'scripts/publisher.ts',
          'add',
          '--namespace',
          'acme',
          '--issuer',
          GITHUB,
          '--repository',
          'acme/terraform-provider-thing',
          '--workflow',
          'release.yml',
          '--ref',
          'refs/tags/v*',
          '--package',
          'acme/thing',
          '--api',
          api,
          '--persist-to',
          dir,
          '--json',
        ],
        { cwd: root },
      );
      expect(JSON.parse(added.stdout).publisher).toMatchObject(IDS);
      expect((await run(tsx, ['scripts/publisher.ts', 'list', '--namespace', 'acme', '--persist-to', dir], { cwd: root })).stdout).toContain(
        '(id 123456, owner id 654321)',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
