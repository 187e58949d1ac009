import { importJWK, SignJWT, type JWTPayload } from 'jose';
import { HOST } from './api';

/**
 * CI ID tokens for the publish tests inside workerd: signed with a local issuer's key
 * (test/fixtures/ci-issuers.setup.ts, inject('ciIssuers')) for this registry's audience, fresh and with a new `jti`.
 */

interface Issuer {
  url: string;
  alg: string;
  kid: string;
  privateJwk: Parameters<typeof importJWK>[0];
}

const now = () => Math.floor(Date.now() / 1000);

/** A token of `issuer` carrying `claims` (iss, aud, times and jti filled in). */
export async function mint(issuer: Issuer, claims: JWTPayload): Promise<string> {
  const key = await importJWK(issuer.privateJwk, issuer.alg);
  return new SignJWT({ iss: issuer.url, aud: HOST, iat: now(), nbf: now(), exp: now() + 300, jti: crypto.randomUUID(), ...claims })
    .setProtectedHeader({ alg: issuer.alg, kid: issuer.kid })
    .sign(key);
}

/** GitHub's claims for `repository`'s release.yml on tag v1.0.0; ids as given (123456 / 654321 by default). */
export const githubJob = (repository: string, ids: { repository_id?: string; repository_owner_id?: string } = {}): JWTPayload => ({
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
