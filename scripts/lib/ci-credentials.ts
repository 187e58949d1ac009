import { InputError } from '../../src/protocol/errors';

/**
 * The credential `publish-provider` / `publish-module --registry URL` sends
 * as `Authorization: Bearer …`, taken from the environment the way each CI
 * offers it, in this order:
 *
 *   EDGE_REGISTRY_TOKEN        a publish token (npm run token -- create --publish NS)
 *   EDGE_REGISTRY_ID_TOKEN     an OIDC ID token put there by the CI — GitLab CI:
 *                                id_tokens: { EDGE_REGISTRY_ID_TOKEN: { aud: registry.acme.com } }
 *   ACTIONS_ID_TOKEN_REQUEST_URL + ACTIONS_ID_TOKEN_REQUEST_TOKEN
 *                              GitHub Actions with `permissions: id-token: write`: the
 *                              token is requested for audience = the registry's hostname
 *                              (GET URL&audience=HOST, Authorization: bearer REQUEST_TOKEN → {"value": JWT})
 *
 * The audience is the hostname of the registry URL, or EDGE_REGISTRY_AUDIENCE
 * when the registry is reached under another name than its REGISTRY_HOSTNAME
 * (a workers.dev URL, local development). No credential is ever printed.
 */

export const TOKEN_ENV = 'EDGE_REGISTRY_TOKEN';
export const ID_TOKEN_ENV = 'EDGE_REGISTRY_ID_TOKEN';
export const AUDIENCE_ENV = 'EDGE_REGISTRY_AUDIENCE';
export const GITHUB_REQUEST_URL_ENV = 'ACTIONS_ID_TOKEN_REQUEST_URL';
export const GITHUB_REQUEST_TOKEN_ENV = 'ACTIONS_ID_TOKEN_REQUEST_TOKEN';

export interface PublishCredential {
  /** The bearer credential (a secret: never print it). */
  bearer: string;
  /** `token`: a publish token; `ci`: a CI job's OIDC ID token. */
  kind: 'token' | 'ci';
  /** Where it came from, for messages ("EDGE_REGISTRY_TOKEN", "GitHub Actions OIDC (audience registry.acme.com)"). */
  source: string;
}

/** The audience to request an ID token for: EDGE_REGISTRY_AUDIENCE, else the registry URL's hostname. */
export function registryAudience(registryUrl: string, env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env[AUDIENCE_ENV]?.trim();
  if (explicit) return explicit;
  try {
    return new URL(registryUrl).hostname.toLowerCase();
  } catch {
    throw new InputError(`--registry "${registryUrl}" is not a URL; give the registry's base URL, e.g. https://registry.acme.com`);
  }
}

/**
 * The credential for publishing to `registryUrl` (see above). Throws
 * InputError naming what to set when the environment offers none, and when
 * GitHub's token service refuses or answers unusably.
 */
export async function publishCredential(
  registryUrl: string,
  env: NodeJS.ProcessEnv = process.env,
  fetchImpl: typeof fetch = fetch,
): Promise<PublishCredential> {
  const token = env[TOKEN_ENV]?.trim();
  if (token) return { bearer: token, kind: 'token', source: TOKEN_ENV };
  const idToken = env[ID_TOKEN_ENV]?.trim();
  if (idToken) return { bearer: idToken, kind: 'ci', source: ID_TOKEN_ENV };
  const requestUrl = env[GITHUB_REQUEST_URL_ENV]?.trim();
  const requestToken = env[GITHUB_REQUEST_TOKEN_ENV]?.trim();
  const audience = registryAudience(registryUrl, env);
  if (requestUrl && requestToken) {
    return { bearer: await githubIdToken(requestUrl, requestToken, audience, fetchImpl), kind: 'ci', source: `GitHub Actions OIDC (audience ${audience})` };
  }
  if (requestUrl || requestToken) {
    throw new InputError(
      `${requestUrl ? GITHUB_REQUEST_TOKEN_ENV : GITHUB_REQUEST_URL_ENV} is not set: GitHub sets both only for a job with \`permissions: id-token: write\``,
    );
  }
  throw new InputError(
    `--registry needs a credential: ${TOKEN_ENV} (a publish token: npm run token -- create --publish NAMESPACE), ` +
      `or run in GitHub Actions with \`permissions: id-token: write\`, or in GitLab CI with ` +
      `\`id_tokens: { ${ID_TOKEN_ENV}: { aud: ${audience} } }\` — the namespace must trust the job (npm run publisher -- add)`,
  );
}

/** GET REQUEST_URL&audience=AUD with the runner's request token → the JWT in {"value": …}. */
async function githubIdToken(requestUrl: string, requestToken: string, audience: string, fetchImpl: typeof fetch): Promise<string> {
  let url: URL;
  try {
    url = new URL(requestUrl);
  } catch {
    throw new InputError(`${GITHUB_REQUEST_URL_ENV} is not a URL`);
  }
  url.searchParams.set('audience', audience);
  let response: Response;
  try {
    response = await fetchImpl(url, {
      headers: { authorization: `bearer ${requestToken}`, accept: 'application/json; api-version=2.0' },
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new Error(`GitHub's OIDC token service (${url.origin}) could not be reached: ${(error as Error).message}`);
  }
  if (!response.ok) {
    throw new InputError(
      `GitHub's OIDC token service answered ${response.status} for audience ${audience}: does the job have \`permissions: id-token: write\`?`,
    );
  }
  const body = (await response.json().catch(() => null)) as { value?: unknown } | null;
  if (typeof body?.value !== 'string' || body.value.split('.').length !== 3) {
    throw new Error(`GitHub's OIDC token service answered without a token ({"value": …})`);
  }
  return body.value;
}
