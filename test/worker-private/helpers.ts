import { env as workersEnv } from 'cloudflare:workers';
import type { Env } from '../../src/env';
import { parseScope } from '../../src/access/scope';
import { newToken, tokenId, tokenSha256 } from '../../src/access/tokens';
import { writeTokenRecord } from '../../src/store/tokens/write';
import { type TokenRecord } from '../../src/store/tokens/read';

export * from '../worker/helpers';

/** The bindings, typed as the Worker's Env (importing miniflare anywhere in the program shadows Cloudflare.Env's typing). */
export const env = workersEnv as unknown as Env;

/** Issues a token the way `npm run token -- create` does: only its hash is stored. */
export async function issueToken(
  scopes: string[],
  options: { expires?: string | null; name?: string; purpose?: 'read' | 'publish' } = {},
): Promise<{ token: string; record: TokenRecord }> {
  const token = newToken();
  const sha256 = tokenSha256(token);
  const record: TokenRecord = {
    id: tokenId(sha256),
    name: options.name ?? 'test',
    sha256,
    scopes: scopes.map((scope) => parseScope(scope, 'read')),
    created: new Date().toISOString(),
    expires: options.expires ?? null,
    purpose: options.purpose ?? 'read',
  };
  await writeTokenRecord(env.REGISTRY_KV, record);
  return { token, record };
}

export const bearer = (token: string): RequestInit => ({ headers: { authorization: `Bearer ${token}` } });

export async function errorsOf(response: Response): Promise<string[]> {
  const body = await response.json<{ errors: string[] }>();
  return body.errors;
}
