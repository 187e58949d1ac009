import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishCredential, registryAudience } from '../../scripts/lib/ci-credentials';
import { githubClaims, startCiIssuers, type CiIssuers } from '../fixtures/ci-issuers';

/** How publish --registry finds its credential in a CI's environment (GitHub's token service is the local stand-in). */
let ci: CiIssuers;
beforeAll(async () => {
  ci = await startCiIssuers();
  ci.githubJob = githubClaims('acme/terraform-provider-thing');
});
afterAll(() => ci?.close());

describe('publishCredential', () => {
  it("GitHub Actions: requests an ID token for the registry hostname with the runner's request token", async () => {
    const before = ci.github.hits.token ?? 0;
    const credential = await publishCredential('https://registry.acme.com/', ci.githubRunnerEnv());
    expect(credential).toMatchObject({ kind: 'ci', source: 'GitHub Actions OIDC (audience registry.acme.com)' });
    expect(decodeJwt(credential.bearer)).toMatchObject({ aud: 'registry.acme.com', iss: ci.github.url, repository: 'acme/terraform-provider-thing' });
    expect(ci.github.hits.token).toBe(before + 1);
    // EDGE_REGISTRY_AUDIENCE names the registry when it is reached under another name (local dev, workers.dev).
    const local = await publishCredential('https://localhost:8787', { ...ci.githubRunnerEnv(), EDGE_REGISTRY_AUDIENCE: 'registry.example.com' });
    expect(decodeJwt(local.bearer).aud).toBe('registry.example.com');
  });

  it('a publish token, then an ID token from the environment (GitLab id_tokens), come first', async () => {
    expect(
      await publishCredential('https://registry.acme.com', { ...ci.githubRunnerEnv(), EDGE_REGISTRY_TOKEN: 'ert_x', EDGE_REGISTRY_ID_TOKEN: 'a.b.c' }),
    ).toEqual({ bearer: 'ert_x', kind: 'token', source: 'EDGE_REGISTRY_TOKEN' });
    expect(await publishCredential('https://registry.acme.com', { ...ci.githubRunnerEnv(), EDGE_REGISTRY_ID_TOKEN: 'a.b.c' })).toEqual({
      bearer: 'a.b.c',
      kind: 'ci',
      source: 'EDGE_REGISTRY_ID_TOKEN',
    });
  });

  it("refuses, naming what to set: no credential, half of GitHub's pair, a request token GitHub refuses", async () => {
    await expect(publishCredential('https://registry.acme.com', {})).rejects.toMatchObject({
      name: 'InputError',
      message: expect.stringMatching(/EDGE_REGISTRY_TOKEN .*permissions: id-token: write.*EDGE_REGISTRY_ID_TOKEN: \{ aud: registry\.acme\.com \}/),
    });
    await expect(
      publishCredential('https://registry.acme.com', { ACTIONS_ID_TOKEN_REQUEST_URL: ci.githubRunnerEnv().ACTIONS_ID_TOKEN_REQUEST_URL }),
    ).rejects.toThrow(/ACTIONS_ID_TOKEN_REQUEST_TOKEN is not set/);
    await expect(publishCredential('https://registry.acme.com', { ...ci.githubRunnerEnv(), ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'wrong' })).rejects.toMatchObject({
      name: 'InputError',
      message: expect.stringContaining('answered 401 for audience registry.acme.com'),
    });
    expect(() => registryAudience('not a url', {})).toThrow(/is not a URL/);
  });
});
