import { base64url, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CiTokenError, MAX_TOKEN_AGE_SECONDS, verifyCiToken, type CiTokenRefusal } from '../../src/access/ci-token';
import { IssuerKeyCache } from '../../src/access/issuer-keys';
import { parsePublisherInput, type GitHubPublisher, type TrustedPublisher } from '../../src/access/publishers';
import type { PackageRef } from '../../src/access/scope';
import { githubClaims, gitlabClaims, startCiIssuers, type CiIssuers } from '../fixtures/ci-issuers';

/**
 * CI ID-token verification against local GitHub- and GitLab-shaped issuers
 * (their own keys, discovery and JWKS on loopback HTTP): the real jose code
 * the Worker runs, every hostile case refused with its reason.
 */
const HOST = 'registry.example.com';
// The ids the stand-in issuers put in their tokens (test/fixtures/ci-issuers.ts).
const GITHUB_IDS = { repositoryId: '123456', ownerId: '654321', packages: ['acme/thing'] };
const GITLAB_IDS = { projectId: '4242', namespaceId: '42', packages: ['acme/thing', 'acme/vpc/*'] };
const THING: PackageRef = { kind: 'provider', namespace: 'acme', type: 'thing' };
let ci: CiIssuers;
let publishers: TrustedPublisher[];

beforeAll(async () => {
  ci = await startCiIssuers();
  publishers = [
    await parsePublisherInput({
      issuer: ci.github.url,
      repository: 'acme/terraform-provider-thing',
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      ...GITHUB_IDS,
    }),
    await parsePublisherInput({
      issuer: ci.github.url,
      repository: 'acme/terraform-provider-env',
      workflow: 'release.yml',
      environment: 'release',
      ...GITHUB_IDS,
    }),
    await parsePublisherInput({ issuer: ci.gitlab.url, projectPath: 'acme/modules/vpc', ref: 'refs/tags/v*', ...GITLAB_IDS }),
  ];
});
afterAll(() => ci?.close());

const verify = (token: string, options: { now?: Date; keys?: IssuerKeyCache; publishers?: TrustedPublisher[]; pkg?: PackageRef } = {}) =>
  verifyCiToken(token, {
    namespace: 'acme',
    pkg: options.pkg ?? THING,
    publishers: options.publishers ?? publishers,
    hostname: HOST,
    keys: options.keys ?? new IssuerKeyCache(),
    ...(options.now ? { now: options.now } : {}),
  });

async function refusal(promise: Promise<unknown>): Promise<CiTokenError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CiTokenError);
  return error as CiTokenError;
}
async function expectRefused(promise: Promise<unknown>, reason: CiTokenRefusal, message?: RegExp): Promise<CiTokenError> {
  const error = await refusal(promise);
  expect(error.reason, error.message).toBe(reason);
  if (message) expect(error.message).toMatch(message);
  return error;
}

const thing = () => githubClaims('acme/terraform-provider-thing', { workflow: 'release.yml', ref: 'refs/tags/v1.2.3', runId: '555' });

describe('accepted', () => {
  it('a GitHub Actions release job of the trusted repository, workflow and tag (RS256, aud = hostname)', async () => {
    const token = await ci.github.mint({ ...thing(), aud: HOST });
    const { publisher, actor } = await verify(token);
    expect(publisher).toBe(publishers[0]);
    expect(actor).toEqual({
      kind: 'ci',
      issuer: ci.github.url,
      subject: 'repo:acme/terraform-provider-thing:ref:refs/tags/v1.2.3',
      repository: 'acme/terraform-provider-thing',
      workflow: 'acme/terraform-provider-thing/.github/workflows/release.yml@refs/tags/v1.2.3',
      ref: 'refs/tags/v1.2.3',
      runId: '555/1',
      jti: expect.any(String),
    });
  });

  it('a GitLab CI tag pipeline of the trusted project (ES256, aud = https://hostname)', async () => {
    const token = await ci.gitlab.mint({ ...gitlabClaims('acme/modules/vpc', { ref: 'v2.0.0' }), aud: `https://${HOST}` });
    const { publisher, actor } = await verify(token);
    expect(publisher).toBe(publishers[2]);
    expect(actor).toMatchObject({ issuer: ci.gitlab.url, repository: 'acme/modules/vpc', ref: 'refs/tags/v2.0.0', runId: '1001/2002' });
  });

  it('a job in the trusted environment, repository names compared case-insensitively', async () => {
    const token = await ci.github.mint({ ...githubClaims('Acme/Terraform-Provider-Env', { environment: 'Release', ref: 'refs/heads/main' }), aud: HOST });
    expect((await verify(token)).publisher).toBe(publishers[1]);
  });

  it("a reusable workflow: the caller's workflow_ref names the trusted file", async () => {
    const claims = { ...thing(), job_workflow_ref: 'acme/shared-workflows/.github/workflows/build.yml@refs/heads/main', aud: HOST };
    expect((await verify(await ci.github.mint(claims))).publisher).toBe(publishers[0]);
  });

  it('discovery and JWKS are fetched once and reused; a rotated key is picked up by refetching the JWKS', async () => {
    const keys = new IssuerKeyCache({ cooldownMs: 0 });
    const before = { ...ci.github.hits };
    await verify(await ci.github.mint({ ...thing(), aud: HOST }), { keys });
    await verify(await ci.github.mint({ ...thing(), aud: HOST }), { keys });
    expect((ci.github.hits.discovery ?? 0) - (before.discovery ?? 0)).toBe(1);
    expect((ci.github.hits.jwks ?? 0) - (before.jwks ?? 0)).toBe(1);
    const oldKey = ci.github.keys[0]!;
    await ci.github.rotate();
    try {
      expect((await verify(await ci.github.mint({ ...thing(), aud: HOST }), { keys })).publisher).toBe(publishers[0]);
      expect((ci.github.hits.jwks ?? 0) - (before.jwks ?? 0)).toBe(2);
      // The retired key is gone from the JWKS: its tokens are refused.
      await expectRefused(
        verify(await ci.github.mint({ ...thing(), aud: HOST }, { key: oldKey }), { keys }),
        'invalid',
        /no key .* matches the CI ID token's kid/,
      );
    } finally {
      ci.github.keys = [oldKey];
    }
  });
});

describe('refused (hostile or misconfigured)', () => {
  it('wrong aud', async () => {
    await expectRefused(
      verify(await ci.github.mint({ ...thing(), aud: 'https://github.com/acme' })),
      'invalid',
      /"aud" claim .* audience registry\.example\.com/,
    );
    await expectRefused(verify(await ci.github.mint({ ...thing(), aud: 'registry.example.com.evil.example' })), 'invalid', /"aud"/);
  });

  it('wrong iss: an issuer no publisher names is never fetched', async () => {
    const before = { ...ci.gitlab.hits };
    const onlyGithub = publishers.filter((p) => p.issuer === ci.github.url);
    const error = await expectRefused(
      verify(await ci.gitlab.mint({ ...gitlabClaims('acme/modules/vpc'), aud: HOST }), { publishers: onlyGithub }),
      'untrusted-issuer',
      /is not trusted for namespace acme/,
    );
    expect(ci.gitlab.hits).toEqual(before);
    expect(error.claimed).toMatchObject({ issuer: ci.gitlab.url, repository: 'acme/modules/vpc' });
    await expectRefused(verify(await ci.github.mint({ ...thing(), iss: 'https://token.actions.githubusercontent.com', aud: HOST })), 'untrusted-issuer');
  });

  it("wrong iss: a token claiming the GitHub issuer but signed by another issuer's key", async () => {
    const forged = await new SignJWT({ ...thing(), iss: ci.github.url, aud: HOST, iat: now(), exp: now() + 300 })
      .setProtectedHeader({ alg: 'ES256', kid: ci.gitlab.keys[0]!.kid })
      .sign(ci.gitlab.keys[0]!.privateKey);
    await expectRefused(verify(forged), 'invalid');
  });

  it('expired (beyond the 30 s skew), and a token replayed after it expired', async () => {
    await expectRefused(verify(await ci.github.mint({ ...thing(), aud: HOST, iat: now() - 700, nbf: now() - 700, exp: now() - 60 })), 'expired', /has expired/);
    const token = await ci.github.mint({ ...thing(), aud: HOST });
    await verify(token); // used once, within its lifetime
    const later = new Date((now() + 300 + 31) * 1000);
    await expectRefused(verify(token, { now: later }), 'expired');
  });

  it('nbf in the future, iat in the future', async () => {
    await expectRefused(verify(await ci.github.mint({ ...thing(), aud: HOST, nbf: now() + 120 })), 'invalid', /"nbf"/);
    await expectRefused(verify(await ci.github.mint({ ...thing(), aud: HOST, iat: now() + 120, nbf: now() })), 'invalid', /issued in the future/);
  });

  it('missing exp, iat, sub or jti', async () => {
    for (const claim of ['exp', 'iat', 'sub', 'jti']) {
      const claims: Record<string, unknown> = { ...thing(), aud: HOST, iss: ci.github.url, nbf: now(), iat: now(), exp: now() + 300, jti: 'j' };
      delete claims[claim];
      const key = ci.github.keys[0]!;
      const token = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: key.kid }).sign(key.privateKey);
      await expectRefused(verify(token), 'invalid', new RegExp(`"${claim}"`));
    }
  });

  it('alg: none', async () => {
    const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    const payload = base64url.encode(JSON.stringify({ ...thing(), iss: ci.github.url, aud: HOST, iat: now(), exp: now() + 300 }));
    await expectRefused(verify(`${header}.${payload}.`), 'malformed', /"none"; only RS256 and ES256/);
  });

  it("HS256 signed with the issuer's public key (key confusion)", async () => {
    const key = ci.github.keys[0]!;
    const secret = new TextEncoder().encode(JSON.stringify(key.publicJwk));
    const token = await new SignJWT({ ...thing(), iss: ci.github.url, aud: HOST, iat: now(), exp: now() + 300 })
      .setProtectedHeader({ alg: 'HS256', kid: key.kid })
      .sign(secret);
    await expectRefused(verify(token), 'malformed', /"HS256"/);
  });

  it('unknown kid (a key the issuer never published), after refetching the JWKS', async () => {
    const keys = new IssuerKeyCache({ cooldownMs: 0 });
    await verify(await ci.github.mint({ ...thing(), aud: HOST }), { keys });
    const before = ci.github.hits.jwks ?? 0;
    await expectRefused(verify(await ci.github.mint({ ...thing(), aud: HOST }, { key: await ci.github.strayKey() }), { keys }), 'invalid', /kid/);
    expect(ci.github.hits.jwks).toBe(before + 1);
  });

  it('a stray key that reuses a published kid: the signature does not verify', async () => {
    const stray = await ci.github.strayKey();
    await expectRefused(
      verify(await ci.github.mint({ ...thing(), aud: HOST }, { key: { ...stray, kid: ci.github.keys[0]!.kid } })),
      'invalid',
      /signature does not verify/,
    );
  });

  it('tampered payload', async () => {
    const [header, , signature] = (await ci.github.mint({ ...githubClaims('acme/terraform-provider-other'), aud: HOST })).split('.');
    const payload = base64url.encode(JSON.stringify({ ...thing(), iss: ci.github.url, aud: HOST, iat: now(), exp: now() + 300 }));
    await expectRefused(verify(`${header}.${payload}.${signature}`), 'invalid', /signature does not verify/);
  });

  it('another repository, workflow, ref or environment: a genuine token no publisher allows', async () => {
    const cases = [
      githubClaims('acme/terraform-provider-other', { ref: 'refs/tags/v1.0.0' }),
      githubClaims('evil/terraform-provider-thing', { ref: 'refs/tags/v1.0.0' }),
      githubClaims('acme/terraform-provider-thing', { workflow: 'ci.yml', ref: 'refs/tags/v1.0.0' }),
      githubClaims('acme/terraform-provider-thing', { ref: 'refs/heads/main' }),
      githubClaims('acme/terraform-provider-thing', { ref: 'refs/heads/v1.0.0' }),
      githubClaims('acme/terraform-provider-env', { environment: 'staging' }),
      githubClaims('acme/terraform-provider-env'),
      // A workflow file of the right name in another repository (a reusable workflow called from elsewhere).
      {
        ...githubClaims('acme/terraform-provider-thing', { ref: 'refs/tags/v1.0.0' }),
        workflow_ref: 'evil/x/.github/workflows/release.yml@refs/tags/v1',
        job_workflow_ref: 'evil/x/.github/workflows/release.yml@refs/tags/v1',
      },
    ];
    for (const claims of cases) {
      const error = await expectRefused(
        verify(await ci.github.mint({ ...claims, aud: HOST })),
        'no-publisher',
        /matches none of the trusted publishers of namespace acme/,
      );
      expect(error.claimed?.repository).toBe(claims.repository);
    }
    // GitLab: a branch named like a release tag, and another project.
    await expectRefused(verify(await ci.gitlab.mint({ ...gitlabClaims('acme/modules/vpc', { ref: 'v9.9.9', refType: 'branch' }), aud: HOST })), 'no-publisher');
    await expectRefused(verify(await ci.gitlab.mint({ ...gitlabClaims('acme/modules/other'), aud: HOST })), 'no-publisher');
  });

  it('a recreated repository (same names, other ids) and a transferred one (same repository id, other owner id)', async () => {
    const recreated = await expectRefused(
      verify(await ci.github.mint({ ...thing(), repository_id: '999001', repository_owner_id: '999002', aud: HOST })),
      'no-publisher',
      /has the trusted name but not the trusted id/,
    );
    expect(recreated.claimed?.repository).toBe('acme/terraform-provider-thing');
    await expectRefused(verify(await ci.github.mint({ ...thing(), repository_owner_id: '999002', aud: HOST })), 'no-publisher', /not the trusted id/);
    // A token with no ids at all matches no pinned publisher.
    const noIds: Record<string, unknown> = { ...thing(), aud: HOST };
    delete noIds.repository_id;
    await expectRefused(verify(await ci.github.mint(noIds)), 'no-publisher');
    // GitLab: a project recreated under the same path, and one moved to another namespace.
    await expectRefused(
      verify(await ci.gitlab.mint({ ...gitlabClaims('acme/modules/vpc'), project_id: '777', namespace_id: '778', aud: HOST })),
      'no-publisher',
      /not the trusted id/,
    );
    await expectRefused(
      verify(await ci.gitlab.mint({ ...gitlabClaims('acme/modules/vpc'), namespace_id: '778', aud: HOST })),
      'no-publisher',
      /not the trusted id/,
    );
  });

  it('a GitLab job on an unprotected tag, unless the publisher allows unprotected refs', async () => {
    const token = await ci.gitlab.mint({ ...gitlabClaims('acme/modules/vpc'), ref_protected: 'false', aud: HOST });
    await expectRefused(verify(token), 'no-publisher');
    const missing: Record<string, unknown> = { ...gitlabClaims('acme/modules/vpc'), aud: HOST };
    delete missing.ref_protected;
    await expectRefused(verify(await ci.gitlab.mint(missing)), 'no-publisher');
    const allowing = await parsePublisherInput({
      issuer: ci.gitlab.url,
      projectPath: 'acme/modules/vpc',
      ref: 'refs/tags/v*',
      allowUnprotectedRef: true,
      ...GITLAB_IDS,
    });
    expect((await verify(token, { publishers: [allowing] })).publisher).toBe(allowing);
  });

  it('a token older than MAX_TOKEN_AGE_SECONDS, whatever its exp says', async () => {
    const old = await ci.github.mint({
      ...thing(),
      aud: HOST,
      iat: now() - MAX_TOKEN_AGE_SECONDS - 60,
      nbf: now() - MAX_TOKEN_AGE_SECONDS - 60,
      exp: now() + 3600,
    });
    await expectRefused(verify(old), 'expired', /issued more than 60 minutes ago \(iat\)/);
  });

  it('a publisher stored before ids, workflows, refs or packages were required publishes nothing until pinned, naming what it lacks', async () => {
    const token = await ci.github.mint({ ...thing(), aud: HOST });
    const { repositoryId: _r, ownerId: _o, ...unpinned } = publishers[0]! as GitHubPublisher;
    await expectRefused(
      verify(token, { publishers: [unpinned as TrustedPublisher] }),
      'no-publisher',
      /publishes nothing until the operator pins it: it names no the repository ids \(npm run publisher -- pin/,
    );
    const { packages: _p, ...unscoped } = publishers[0]!;
    await expectRefused(verify(token, { publishers: [unscoped as TrustedPublisher] }), 'no-publisher', /it names no its packages/);
    const { workflow: _w, ...anyWorkflow } = publishers[0]! as GitHubPublisher;
    await expectRefused(verify(token, { publishers: [anyWorkflow as TrustedPublisher] }), 'no-publisher', /it names no a workflow/);
    const { ref: _f, ...anyRef } = publishers[0]!;
    await expectRefused(verify(token, { publishers: [anyRef as TrustedPublisher] }), 'no-publisher', /it names no a ref or an environment/);
    // Complete, it verifies.
    expect((await verify(token)).publisher).toBe(publishers[0]);
  });

  it('a trusted job may write only the packages named for it: another provider, a module, a pattern', async () => {
    const token = await ci.github.mint({ ...thing(), aud: HOST });
    await expectRefused(
      verify(token, { pkg: { kind: 'provider', namespace: 'acme', type: 'other' } }),
      'no-publisher',
      /may not publish or change acme\/other: its trusted publisher allows only acme\/thing/,
    );
    // A provider pattern never names a module of the same name.
    await expectRefused(verify(token, { pkg: { kind: 'module', namespace: 'acme', name: 'thing', system: 'aws' } }), 'no-publisher');
    const gitlab = await ci.gitlab.mint({ ...gitlabClaims('acme/modules/vpc'), aud: HOST });
    expect((await verify(gitlab, { pkg: { kind: 'module', namespace: 'acme', name: 'vpc', system: 'google' } })).publisher).toBe(publishers[2]);
    await expectRefused(verify(gitlab, { pkg: { kind: 'module', namespace: 'acme', name: 'vpcx', system: 'aws' } }), 'no-publisher');
    const wide = await parsePublisherInput({ ...publishers[0]!, packages: undefined, namespaceWide: true });
    expect((await verify(token, { publishers: [wide], pkg: { kind: 'module', namespace: 'acme', name: 'any', system: 'aws' } })).publisher).toBe(wide);
  });

  it('a reusable workflow of another repository, when the publisher names it in full', async () => {
    const shared = await parsePublisherInput({
      issuer: ci.github.url,
      repository: 'acme/terraform-provider-thing',
      workflow: 'acme/shared-workflows/.github/workflows/build.yml@refs/heads/main',
      ref: 'refs/tags/v*',
      ...GITHUB_IDS,
    });
    const claims = {
      ...thing(),
      workflow_ref: 'acme/terraform-provider-thing/.github/workflows/ci.yml@refs/tags/v1.2.3',
      job_workflow_ref: 'acme/shared-workflows/.github/workflows/build.yml@refs/heads/main',
      aud: HOST,
    };
    expect((await verify(await ci.github.mint(claims), { publishers: [shared] })).publisher).toBe(shared);
    await expectRefused(
      verify(await ci.github.mint({ ...claims, job_workflow_ref: 'acme/shared-workflows/.github/workflows/build.yml@refs/heads/evil' }), {
        publishers: [shared],
      }),
      'no-publisher',
    );
    await expectRefused(
      verify(await ci.github.mint({ ...claims, job_workflow_ref: 'evil/shared-workflows/.github/workflows/build.yml@refs/heads/main' }), {
        publishers: [shared],
      }),
      'no-publisher',
    );
  });

  it('a namespace with no publishers', async () => {
    await expectRefused(verify(await ci.github.mint({ ...thing(), aud: HOST }), { publishers: [] }), 'untrusted-issuer', /no trusted publishers/);
  });

  it('not a JWT at all, or an oversized one', async () => {
    await expectRefused(verify('ert_notajwt'), 'malformed');
    await expectRefused(verify('a.b'), 'malformed');
    await expectRefused(verify(`${'a'.repeat(20000)}.b.c`), 'malformed');
    await expectRefused(verify('eyJub3Q.anNvbg.x'), 'malformed', /not a readable JWT/);
  });

  it("an issuer that is down or whose discovery is wrong: unavailable, not the caller's fault", async () => {
    const down = await parsePublisherInput({
      issuer: 'http://127.0.0.1:9/nothing',
      repository: 'acme/terraform-provider-thing',
      workflow: 'release.yml',
      anyRef: true,
      ...GITHUB_IDS,
    });
    const token = await ci.github.mint({ ...thing(), iss: down.issuer, aud: HOST });
    await expectRefused(verify(token, { publishers: [down] }), 'issuer-unavailable', /could not be reached/);
    const wrong = await parsePublisherInput({
      issuer: `${ci.github.url}/..%2Fgitlab`,
      repository: 'acme/terraform-provider-thing',
      workflow: 'release.yml',
      anyRef: true,
      ...GITHUB_IDS,
    });
    await expectRefused(verify(await ci.github.mint({ ...thing(), iss: wrong.issuer, aud: HOST }), { publishers: [wrong] }), 'issuer-unavailable');
  });
});

function now(): number {
  return Math.floor(Date.now() / 1000);
}
