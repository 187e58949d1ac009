import { env } from 'cloudflare:workers';
import { base64url, exportJWK, generateKeyPair, importJWK, SignJWT, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parsePublisherInput } from '../../../src/access/publishers';
import { listAuditEntries } from '../../../src/store/audit/read';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { versionsDocumentKey } from '../../../src/store/layout';
import { writePublishers } from '../../../src/store/publishers/write';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { BlobStore } from '../../../src/store/store';
import { atFakeTime, get } from '../helpers';
import { buildRelease, HOST, manifestOf, publishRelease, startPublish } from './api';

/**
 * The publish API with CI ID tokens, inside workerd: a trusted job's token
 * publishes an unsigned release that the registry signs with the key it
 * holds; every hostile token is refused (401/403) with nothing written and
 * an audit entry of the refusal naming who the token claims to be. Issuers:
 * the local GitHub- and GitLab-shaped ones (test/fixtures/ci-issuers.setup.ts).
 */
const { github, gitlab } = inject('ciIssuers');
const REPO = 'acme/terraform-provider-thing';
const now = () => Math.floor(Date.now() / 1000);

async function mint(issuer: typeof github, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  const key = await importJWK(issuer.privateJwk, issuer.alg);
  return new SignJWT({ iss: issuer.url, aud: HOST, iat: now(), nbf: now(), exp: now() + 300, jti: crypto.randomUUID(), ...claims })
    .setProtectedHeader({ alg: issuer.alg, kid: issuer.kid, ...header })
    .sign(key);
}

/** What GitHub puts in the token of REPO's release.yml on a tag, in environment release. */
function job(overrides: JWTPayload = {}, ref = 'refs/tags/v1.0.0', workflow = 'release.yml', repository = REPO): JWTPayload {
  return {
    sub: `repo:${repository}:environment:release`,
    repository,
    repository_id: '123456',
    repository_owner_id: '654321',
    ref,
    environment: 'release',
    run_id: '99',
    run_attempt: '2',
    workflow_ref: `${repository}/.github/workflows/${workflow}@${ref}`,
    job_workflow_ref: `${repository}/.github/workflows/${workflow}@${ref}`,
    ...overrides,
  };
}

const stored = async (type: string) => ({
  versions: await env.REGISTRY_KV.get(versionsDocumentKey({ hostname: HOST, namespace: 'ci', type }), 'text'),
  objects: (await env.REGISTRY_R2.list({ prefix: `${HOST}/ci/${type}/` })).objects.length,
  records: (await env.REGISTRY_R2.list({ prefix: `.records/${HOST}/ci/${type}/` })).objects.length,
});

let heldKeyId: string;
beforeAll(async () => {
  const key = inject('fixtureSigningKey');
  heldKeyId = key.keyId;
  await writeSigningKeys(env.REGISTRY_KV, HOST, 'ci', [{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]);
  await storeHeldKey(env.REGISTRY_KV, env.SIGNING_KEY_SECRET!, HOST, 'ci', key.keyId, key.armoredPrivateKey);
  await writePublishers({ kv: env.REGISTRY_KV as never, blobs: env.REGISTRY_R2 as never }, HOST, 'ci', [
    await parsePublisherInput({
      issuer: github.url,
      repository: REPO,
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      environment: 'release',
      repositoryId: '123456',
      ownerId: '654321',
      namespaceWide: true,
    }),
    await parsePublisherInput({
      issuer: gitlab.url,
      projectPath: 'acme/modules/vpc',
      ref: 'refs/tags/v*',
      projectId: '4242',
      namespaceId: '42',
      namespaceWide: true,
    }),
  ]);
});

describe('publishing with a CI ID token', { timeout: 60_000 }, () => {
  it('a trusted GitHub job publishes an unsigned release; the registry signs it with the held key; audited as the CI job', async () => {
    const release = await buildRelease('thing', '1.0.0', { unsigned: true });
    const result = await publishRelease(await mint(github, job()), 'ci', release);
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body).toMatchObject({ status: 'published', key_id: heldKeyId });
    const download = (await (await get('/v1/providers/ci/thing/1.0.0/download/linux/amd64')).json()) as {
      signing_keys: { gpg_public_keys: { key_id: string }[] };
    };
    expect(download.signing_keys.gpg_public_keys.map((k) => k.key_id)).toEqual([heldKeyId]);
    const { entries } = await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace: 'ci' });
    expect(entries.find((e) => e.target === `${HOST}/ci/thing 1.0.0` && e.outcome === 'ok')?.actor).toEqual({
      kind: 'ci',
      issuer: github.url,
      subject: `repo:${REPO}:environment:release`,
      repository: REPO,
      workflow: `${REPO}/.github/workflows/release.yml@refs/tags/v1.0.0`,
      ref: 'refs/tags/v1.0.0',
      runId: '99/2',
      environment: 'release',
      jti: expect.any(String),
    });
  });

  it('every hostile token is refused with nothing written and a refused audit entry', async () => {
    const release = await buildRelease('hostile', '1.0.0', { unsigned: true });
    const manifest = await manifestOf(release);
    const stray = await generateKeyPair('RS256', { extractable: true });
    const strayJwk = { ...(await exportJWK(stray.privateKey)), kid: 'stray' };
    const good = await mint(github, job({}, 'refs/tags/v1.0.0'));
    const [header, , signature] = good.split('.');
    const cases: [string, string, number][] = [
      ['wrong aud', await mint(github, job({ aud: 'https://github.com/acme' })), 401],
      ['wrong iss (an issuer no publisher names)', await mint(github, job({ iss: 'https://token.actions.githubusercontent.com' })), 401],
      ['expired', await mint(github, job({ iat: now() - 900, nbf: now() - 900, exp: now() - 120 })), 401],
      ['nbf in the future', await mint(github, job({ nbf: now() + 300 })), 401],
      [
        'alg none',
        `${base64url.encode(JSON.stringify({ alg: 'none' }))}.${base64url.encode(JSON.stringify({ ...job(), iss: github.url, aud: HOST, iat: now(), exp: now() + 300 }))}.`,
        401,
      ],
      [
        'HS256 signed with the public key',
        await new SignJWT({ ...job(), iss: github.url, aud: HOST, iat: now(), exp: now() + 300 })
          .setProtectedHeader({ alg: 'HS256', kid: github.kid })
          .sign(new TextEncoder().encode(JSON.stringify(github.publicJwk))),
        401,
      ],
      [
        'unknown kid',
        await new SignJWT({ ...job(), iss: github.url, aud: HOST, iat: now(), exp: now() + 300 })
          .setProtectedHeader({ alg: 'RS256', kid: 'stray' })
          .sign(await importJWK(strayJwk, 'RS256')),
        401,
      ],
      [
        'tampered payload',
        `${header}.${base64url.encode(JSON.stringify({ ...job({}, 'refs/tags/v9.9.9'), iss: github.url, aud: HOST, iat: now(), exp: now() + 300 }))}.${signature}`,
        401,
      ],
      ['another repository', await mint(github, job({}, 'refs/tags/v1.0.0', 'release.yml', 'acme/terraform-provider-other')), 403],
      ['another workflow', await mint(github, job({}, 'refs/tags/v1.0.0', 'ci.yml')), 403],
      ['another ref (a branch)', await mint(github, job({}, 'refs/heads/main')), 403],
      ['another environment', await mint(github, job({ environment: 'staging' })), 403],
      [
        'a GitLab job of another project',
        await mint(gitlab, { sub: 'project_path:acme/other', project_path: 'acme/other', ref: 'v1.0.0', ref_type: 'tag' }),
        403,
      ],
    ];
    for (const [what, token, status] of cases) {
      const response = await startPublish(token, 'ci', release, manifest);
      expect(response.status, `${what}: ${await response.clone().text()}`).toBe(status);
      if (status === 401) expect(response.headers.get('www-authenticate'), what).toMatch(/^Bearer /);
    }
    // A token replayed after it expired: accepted while valid, refused once past exp (+ skew).
    const replay = await mint(github, job({ exp: now() + 2 }));
    const replayed = await buildRelease('replayed', '1.0.0', { unsigned: true });
    expect((await startPublish(replay, 'ci', replayed, { ...(await manifestOf(replayed)), dry_run: true })).status).toBe(200);
    expect((await atFakeTime(Date.now() + 60_000, () => startPublish(replay, 'ci', release, manifest))).status).toBe(401);

    expect(await stored('hostile')).toEqual({ versions: null, objects: 0, records: 0 });
    expect((await env.REGISTRY_R2.list({ prefix: '.uploads/' })).objects).toEqual([]);
    const refused = (await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace: 'ci' })).entries.filter(
      (e) => e.target === `${HOST}/ci/hostile 1.0.0` && e.outcome === 'refused',
    );
    expect(refused.length).toBe(cases.length + 1);
    expect(refused.every((e) => e.actor.kind === 'ci')).toBe(true);
    expect(refused.map((e) => (e.actor as { repository?: string }).repository)).toContain('acme/terraform-provider-other');
    expect(refused.map((e) => e.reason).join('\n')).not.toMatch(/eyJ/);
  });
});
