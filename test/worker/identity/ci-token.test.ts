import { importJWK, SignJWT } from 'jose';
import { describe, expect, inject, it } from 'vitest';
import { CiTokenError, verifyCiToken } from '../../../src/access/ci-token';
import { IssuerKeyCache } from '../../../src/access/issuer-keys';
import { parsePublisherInput } from '../../../src/access/publishers';

/**
 * CI ID-token verification inside workerd, the runtime that does it: jose on
 * workerd's WebCrypto, discovery and JWKS fetched by the Worker's fetch from
 * the local issuers (test/fixtures/ci-issuers.setup.ts) over loopback HTTP.
 * The hostile cases in depth: test/identity/ci-token.test.ts.
 */
const { github, gitlab } = inject('ciIssuers');
const HOST = 'registry.example.com';

async function mint(issuer: typeof github, claims: Record<string, unknown>): Promise<string> {
  const key = await importJWK(issuer.privateJwk, issuer.alg);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: issuer.url,
    aud: HOST,
    iat: now,
    nbf: now,
    exp: now + 300,
    sub: 'x',
    jti: crypto.randomUUID(),
    repository_id: '123456',
    repository_owner_id: '654321',
    project_id: '4242',
    namespace_id: '42',
    ref_protected: 'true',
    ...claims,
  })
    .setProtectedHeader({ alg: issuer.alg, kid: issuer.kid })
    .sign(key);
}

describe('verifyCiToken in workerd', () => {
  it('accepts a GitHub (RS256) and a GitLab (ES256) token of trusted publishers, fetching discovery and JWKS once per issuer', async () => {
    const keys = new IssuerKeyCache();
    const publishers = [
      await parsePublisherInput({
        issuer: github.url,
        repository: 'acme/terraform-provider-thing',
        workflow: 'release.yml',
        ref: 'refs/tags/v*',
        repositoryId: '123456',
        ownerId: '654321',
        packages: ['acme/thing'],
      }),
      await parsePublisherInput({
        issuer: gitlab.url,
        projectPath: 'acme/modules/vpc',
        anyRef: true,
        projectId: '4242',
        namespaceId: '42',
        packages: ['acme/thing'],
      }),
    ];
    const options = { namespace: 'acme', pkg: { kind: 'provider' as const, namespace: 'acme', type: 'thing' }, publishers, hostname: HOST, keys };
    const fromGithub = await verifyCiToken(
      await mint(github, {
        repository: 'acme/terraform-provider-thing',
        ref: 'refs/tags/v1.0.0',
        run_id: '7',
        workflow_ref: 'acme/terraform-provider-thing/.github/workflows/release.yml@refs/tags/v1.0.0',
      }),
      options,
    );
    expect(fromGithub.actor).toMatchObject({ issuer: github.url, repository: 'acme/terraform-provider-thing', runId: '7' });
    const fromGitlab = await verifyCiToken(await mint(gitlab, { project_path: 'acme/modules/vpc', ref: 'main', ref_type: 'branch' }), options);
    expect(fromGitlab.publisher).toBe(publishers[1]);
  });

  it('refuses a wrong audience, a branch for a tag publisher, and alg none, with their reasons', async () => {
    const publishers = [
      await parsePublisherInput({
        issuer: github.url,
        repository: 'acme/terraform-provider-thing',
        workflow: 'release.yml',
        ref: 'refs/tags/v*',
        repositoryId: '123456',
        ownerId: '654321',
        packages: ['acme/thing'],
      }),
    ];
    const options = {
      namespace: 'acme',
      pkg: { kind: 'provider' as const, namespace: 'acme', type: 'thing' },
      publishers,
      hostname: HOST,
      keys: new IssuerKeyCache(),
    };
    const reason = (token: string) =>
      verifyCiToken(token, options).then(
        () => 'accepted',
        (e: unknown) => (e instanceof CiTokenError ? e.reason : String(e)),
      );
    expect(
      await reason(
        await mint(github, {
          repository: 'acme/terraform-provider-thing',
          ref: 'refs/tags/v1',
          aud: 'https://github.com/acme',
          workflow_ref: 'acme/terraform-provider-thing/.github/workflows/release.yml@refs/tags/v1',
        }),
      ),
    ).toBe('invalid');
    expect(
      await reason(
        await mint(github, {
          repository: 'acme/terraform-provider-thing',
          ref: 'refs/heads/main',
          workflow_ref: 'acme/terraform-provider-thing/.github/workflows/release.yml@refs/heads/main',
        }),
      ),
    ).toBe('no-publisher');
    const [, payload] = (await mint(github, { repository: 'acme/terraform-provider-thing', ref: 'refs/tags/v1' })).split('.');
    expect(await reason(`${btoa(JSON.stringify({ alg: 'none' })).replace(/=+$/, '')}.${payload}.`)).toBe('malformed');
  });
});
