import { env } from 'cloudflare:workers';
import { importJWK, SignJWT, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parsePublisherInput } from '../../../src/access/publishers';
import { listAuditEntries } from '../../../src/store/audit/read';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { publishersKey, versionsDocumentKey } from '../../../src/store/layout';
import { readPublishers } from '../../../src/store/publishers/read';
import { writePublishers } from '../../../src/store/publishers/write';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { BlobStore } from '../../../src/store/store';
import { buildRelease, commit, HOST, manifestOf, publishRelease, put, startPublish, type Session } from './api';

/**
 * The ways a CI job that is not the trusted one tried to publish, inside
 * workerd with real tokens of the local issuers (test/fixtures/ci-issuers.setup.ts):
 * a recreated repository (same names, other ids), a transferred one (same
 * repository id, other owner), a GitLab job on an unprotected tag, a token
 * used for a second publish; and a publisher stored before ids were pinned,
 * pinned by its first publish.
 */
const { github, gitlab } = inject('ciIssuers');
const REPO = 'acme/terraform-provider-thing';
const NS = 'hj';
const now = () => Math.floor(Date.now() / 1000);

async function mint(issuer: typeof github, claims: JWTPayload): Promise<string> {
  const key = await importJWK(issuer.privateJwk, issuer.alg);
  return new SignJWT({ iss: issuer.url, aud: HOST, iat: now(), nbf: now(), exp: now() + 300, jti: crypto.randomUUID(), ...claims })
    .setProtectedHeader({ alg: issuer.alg, kid: issuer.kid })
    .sign(key);
}

/** GitHub's claims for REPO's release.yml on a tag; ids as given (the trusted ones by default). */
const job = (ids: { repository_id?: string; repository_owner_id?: string } = {}, repository = REPO): JWTPayload => ({
  sub: `repo:${repository}:ref:refs/tags/v1.0.0`,
  repository,
  repository_owner: repository.split('/')[0],
  repository_id: '123456',
  repository_owner_id: '654321',
  ref: 'refs/tags/v1.0.0',
  workflow_ref: `${repository}/.github/workflows/release.yml@refs/tags/v1.0.0`,
  job_workflow_ref: `${repository}/.github/workflows/release.yml@refs/tags/v1.0.0`,
  run_id: '1',
  run_attempt: '1',
  ...ids,
});
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

const storedVersions = (type: string, namespace = NS) => env.REGISTRY_KV.get(versionsDocumentKey({ hostname: HOST, namespace, type }), 'text');
const auditOf = async (namespace: string) => (await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace })).entries;

async function trust(namespace: string): Promise<void> {
  const key = inject('fixtureSigningKey');
  await writeSigningKeys(env.REGISTRY_KV, HOST, namespace, [{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]);
  await storeHeldKey(env.REGISTRY_KV, env.SIGNING_KEY_SECRET!, HOST, namespace, key.keyId, key.armoredPrivateKey);
}

beforeAll(async () => {
  await trust(NS);
  await writePublishers(env.REGISTRY_KV, HOST, NS, [
    await parsePublisherInput({
      issuer: github.url,
      repository: REPO,
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      repositoryId: '123456',
      ownerId: '654321',
    }),
    await parsePublisherInput({ issuer: gitlab.url, projectPath: 'acme/modules/vpc', ref: 'refs/tags/v*', projectId: '4242', namespaceId: '42' }),
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

describe('publishers stored before ids were pinned', { timeout: 60_000 }, () => {
  it('keep working: the first publish pins the ids its token presented (audited); then another repository of that name is refused', async () => {
    await trust('legacy');
    // As stored before: no ids, no required workflow or ref.
    await env.REGISTRY_KV.put(
      publishersKey(HOST, 'legacy'),
      JSON.stringify([{ id: '0123456789ab', kind: 'github', issuer: github.url, repository: REPO, created: '2026-01-01T00:00:00.000Z' }]),
    );
    const release = await buildRelease('pinned', '1.0.0', { unsigned: true });
    const published = await publishRelease(await mint(github, job({ repository_id: '555', repository_owner_id: '666' })), 'legacy', release);
    expect(published.committed?.status, JSON.stringify(published.body)).toBe(200);
    expect(await readPublishers(env.REGISTRY_KV as never, HOST, 'legacy')).toMatchObject([{ id: '0123456789ab', repositoryId: '555', ownerId: '666' }]);
    const pin = (await auditOf('legacy')).find((e) => e.action === 'publisher.pin');
    expect(pin).toMatchObject({ outcome: 'ok', target: `${HOST}/legacy`, actor: { kind: 'ci', repository: REPO } });
    expect(pin?.reason).toMatch(/id 555, owner id 666/);
    const next = await buildRelease('pinned', '1.0.1', { unsigned: true });
    expect(
      (await startPublish(await mint(github, job({ repository_id: '999', repository_owner_id: '666' })), 'legacy', next, await manifestOf(next))).status,
    ).toBe(403);
    expect(
      (
        await startPublish(await mint(github, job({ repository_id: '555', repository_owner_id: '666' })), 'legacy', next, {
          ...(await manifestOf(next)),
          dry_run: true,
        })
      ).status,
    ).toBe(200);
  });
});
