import { env } from 'cloudflare:workers';
import type { JWTPayload } from 'jose';
import { githubJob, mint } from './ci-jobs';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parsePublisherInput } from '../../../src/access/publishers';
import { listAuditEntries } from '../../../src/store/audit/read';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { legacyPublishersKey, versionsDocumentKey } from '../../../src/store/layout';
import { readPublishers } from '../../../src/store/publishers/read';
import { writePublishers } from '../../../src/store/publishers/write';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { BlobStore } from '../../../src/store/store';
import { get } from '../helpers';
import { buildRelease, commit, HOST, manifestOf, publishRelease, put, startPublish, type Session } from './api';

/**
 * The ways a CI job that is not the trusted one tried to publish, inside
 * workerd with real tokens of the local issuers (test/fixtures/ci-issuers.setup.ts):
 * a recreated repository (same names, other ids), a transferred one (same
 * repository id, other owner), a GitLab job on an unprotected tag, a token
 * used for a second publish, a trusted job publishing or changing a package
 * not named for it; and a publisher stored before ids were required, which
 * publishes nothing (and is never pinned from a token) until the operator pins it.
 */
const { github, gitlab } = inject('ciIssuers');
const REPO = 'acme/terraform-provider-thing';
const NS = 'hj';
/** GitHub's claims for REPO's release.yml on a tag; ids as given (the trusted ones by default). */
const job = (ids: { repository_id?: string; repository_owner_id?: string } = {}, repository = REPO): JWTPayload => githubJob(repository, ids);
const gitlabJob = (overrides: JWTPayload = {}): JWTPayload => ({
  sub: 'project_path:acme/modules/vpc:ref_type:tag:ref:v1.0.0',
  project_path: 'acme/modules/vpc',
  project_id: '4242',
  namespace_id: '42',
  ref: 'v1.0.0',
  ref_type: 'tag',
  ref_protected: 'true',
  pipeline_id: '1',
  job_id: '2',
  ...overrides,
});

const lifecycle = (path: string, token: string, body: object) =>
  get(path, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
const store = { kv: env.REGISTRY_KV as never, blobs: env.REGISTRY_R2 as never };
const storedVersions = (type: string, namespace = NS) => env.REGISTRY_KV.get(versionsDocumentKey({ hostname: HOST, namespace, type }), 'text');
const auditOf = async (namespace: string) => (await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace })).entries;

async function trust(namespace: string): Promise<void> {
  const key = inject('fixtureSigningKey');
  await writeSigningKeys(env.REGISTRY_KV, HOST, namespace, [{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]);
  await storeHeldKey(env.REGISTRY_KV, env.SIGNING_KEY_SECRET!, HOST, namespace, key.keyId, key.armoredPrivateKey);
}

beforeAll(async () => {
  await trust(NS);
  await writePublishers(store, HOST, NS, [
    await parsePublisherInput({
      issuer: github.url,
      repository: REPO,
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      repositoryId: '123456',
      ownerId: '654321',
      packages: ['hj/hijack', 'hj/once', 'hj/race', 'hj/own-*'],
    }),
    await parsePublisherInput({
      issuer: gitlab.url,
      projectPath: 'acme/modules/vpc',
      ref: 'refs/tags/v*',
      projectId: '4242',
      namespaceId: '42',
      packages: ['hj/unprotected', 'hj/vpc/aws'],
    }),
  ]);
});

describe('publishers pinned to immutable ids', { timeout: 60_000 }, () => {
  it('a recreated repository (same names, other ids) and a transferred one (same repository id, other owner id) are refused, nothing written', async () => {
    const release = await buildRelease('hijack', '9.9.9', { unsigned: true });
    const manifest = await manifestOf(release);
    const recreated = await startPublish(await mint(github, job({ repository_id: '999001', repository_owner_id: '999002' })), NS, release, manifest);
    expect(recreated.status).toBe(403);
    expect(await recreated.text()).toMatch(/has the trusted name but not the trusted id/);
    const transferred = await startPublish(await mint(github, job({ repository_owner_id: '999002' })), NS, release, manifest);
    expect(transferred.status).toBe(403);
    // The genuine repository, by id, may.
    expect((await startPublish(await mint(github, job()), NS, release, { ...manifest, dry_run: true })).status).toBe(200);
    expect(await storedVersions('hijack')).toBeNull();
    expect((await env.REGISTRY_R2.list({ prefix: `${HOST}/${NS}/hijack/` })).objects).toEqual([]);
  });

  it('a GitLab job on an unprotected tag is refused', async () => {
    const release = await buildRelease('unprotected', '1.0.0', { unsigned: true });
    const manifest = { ...(await manifestOf(release)), dry_run: true };
    expect((await startPublish(await mint(gitlab, gitlabJob({ ref_protected: 'false' })), NS, release, manifest)).status).toBe(403);
    expect((await startPublish(await mint(gitlab, gitlabJob()), NS, release, manifest)).status).toBe(200);
  });
});

describe('one token, one publish', { timeout: 60_000 }, () => {
  it('a token that published cannot start another publish; re-running the same one is allowed; another token cannot continue its upload', async () => {
    const token = await mint(github, job());
    const first = await buildRelease('once', '1.0.0', { unsigned: true });
    const published = await publishRelease(token, NS, first);
    expect(published.committed?.status, JSON.stringify(published.body)).toBe(200);
    // Replayed for another release: refused, nothing written.
    const second = await buildRelease('once', '1.0.1', { unsigned: true });
    const replayed = await startPublish(token, NS, second, await manifestOf(second));
    expect(replayed.status).toBe(401);
    expect(await replayed.text()).toMatch(/already started provider\.publish .*once 1\.0\.0.*request a fresh one/);
    expect(JSON.parse((await storedVersions('once'))!).versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
    // The CLI re-run of the same publish (a network failure after the commit): unchanged, not refused.
    const rerun = await startPublish(token, NS, first, await manifestOf(first));
    expect(rerun.status).toBe(200);
    expect(await rerun.json()).toMatchObject({ status: 'unchanged' });

    // A session started by one token: another token of the same job may not upload to it or commit it.
    const third = await buildRelease('once', '1.0.2', { unsigned: true });
    const started = await startPublish(await mint(github, job()), NS, third, await manifestOf(third));
    expect(started.status).toBe(201);
    const session = (await started.json()) as Session;
    const other = await mint(github, job());
    expect((await put(other, session.files[0]!.url, third.files.get(session.files[0]!.filename)!)).status).toBe(403);
    expect((await commit(other, session)).status).toBe(403);
  });

  it('two requests racing with one token for two releases: exactly one starts', async () => {
    const token = await mint(github, job());
    const a = await buildRelease('race', '1.0.0', { unsigned: true });
    const b = await buildRelease('race', '2.0.0', { unsigned: true });
    const statuses = (await Promise.all([startPublish(token, NS, a, await manifestOf(a)), startPublish(token, NS, b, await manifestOf(b))]))
      .map((r) => r.status)
      .sort();
    expect(statuses).toEqual([201, 401]);
  });
});

describe('least privilege per package', { timeout: 60_000 }, () => {
  it("a trusted job publishes the packages named for it, and nothing else of the namespace: another provider, a module, another's lifecycle", async () => {
    // The module project's job (trusted for hj/unprotected and the module hj/vpc/aws) tries the provider repository's package.
    const release = await buildRelease('own-thing', '9.9.9', { unsigned: true });
    const manifest = await manifestOf(release);
    const foreign = await startPublish(await mint(gitlab, gitlabJob()), NS, release, manifest);
    expect(foreign.status).toBe(403);
    expect(await foreign.text()).toMatch(/may not publish or change hj\/own-thing: its trusted publisher allows only hj\/unprotected, hj\/vpc\/aws/);
    expect(await storedVersions('own-thing')).toBeNull();
    expect((await env.REGISTRY_R2.list({ prefix: `${HOST}/${NS}/own-thing/` })).objects).toEqual([]);
    // The provider repository's job may (a pattern: hj/own-*), and then the module job may not withdraw it.
    const published = await publishRelease(await mint(github, job()), NS, release);
    expect(published.committed?.status, JSON.stringify(published.body)).toBe(200);
    const withdraw = await lifecycle(`/v1/publish/lifecycle/providers/${NS}/own-thing`, await mint(gitlab, gitlabJob()), {
      action: 'withdraw',
      version: '9.9.9',
      message: 'hostile',
    });
    expect(withdraw.status).toBe(403);
    expect(JSON.parse((await storedVersions('own-thing'))!).versions.map((v: { version: string }) => v.version)).toEqual(['9.9.9']);
    const refusal = (await auditOf(NS)).find((e) => e.action === 'lifecycle.change' && e.outcome === 'refused');
    expect(refusal).toMatchObject({ outcome: 'refused', actor: { kind: 'ci', repository: 'acme/modules/vpc' } });
  });
});

describe('publishers stored before ids were required', { timeout: 60_000 }, () => {
  it('publish nothing until the operator pins them: never pinned from a token, nothing written; pinned, the pinned repository publishes', async () => {
    await trust('legacy');
    // As stored before: no ids, no workflow, ref or packages, in KV.
    const legacy = JSON.stringify([{ id: '0123456789ab', kind: 'github', issuer: github.url, repository: REPO, created: '2026-01-01T00:00:00.000Z' }]);
    await env.REGISTRY_KV.put(legacyPublishersKey(HOST, 'legacy'), legacy);
    const release = await buildRelease('pinned', '1.0.0', { unsigned: true });
    const refused = await startPublish(
      await mint(github, job({ repository_id: '555', repository_owner_id: '666' })),
      'legacy',
      release,
      await manifestOf(release),
    );
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(
      /matches trusted publisher 0123456789ab .* publishes nothing until the operator pins it: it names no the repository ids, no a workflow, no a ref or an environment, no its packages \(npm run publisher -- pin 0123456789ab/,
    );
    // Nothing was pinned or written back, nothing published.
    expect(await env.REGISTRY_KV.get(legacyPublishersKey(HOST, 'legacy'), 'text')).toBe(legacy);
    expect(await readPublishers(store, HOST, 'legacy')).toMatchObject([{ id: '0123456789ab' }]);
    expect((await readPublishers(store, HOST, 'legacy'))[0]).not.toHaveProperty('repositoryId');
    expect((await auditOf('legacy')).find((e) => e.action === 'publisher.pin')).toBeUndefined();
    expect(await storedVersions('pinned', 'legacy')).toBeNull();
    // The operator pins it (npm run publisher -- pin, tested in test/scripts/publisher.test.ts): that repository by id publishes, another does not.
    await writePublishers(store, HOST, 'legacy', [
      await parsePublisherInput({
        issuer: github.url,
        repository: REPO,
        workflow: 'release.yml',
        ref: 'refs/tags/v*',
        repositoryId: '555',
        ownerId: '666',
        packages: ['legacy/pinned'],
      }),
    ]);
    expect(await env.REGISTRY_KV.get(legacyPublishersKey(HOST, 'legacy'), 'text')).toBeNull();
    expect(
      (await startPublish(await mint(github, job({ repository_id: '999', repository_owner_id: '666' })), 'legacy', release, await manifestOf(release))).status,
    ).toBe(403);
    const published = await publishRelease(await mint(github, job({ repository_id: '555', repository_owner_id: '666' })), 'legacy', release);
    expect(published.committed?.status, JSON.stringify(published.body)).toBe(200);
  });
});
