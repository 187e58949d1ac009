import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

/**
 * A local OpenID Provider for development and the tests: `oidc-provider`
 * (a certified implementation) on 127.0.0.1, standing in for the
 * organisation's Okta / Entra ID / Google / Keycloak / Dex. Its sign-in page
 * accepts the accounts given (any password); consent is implied for the
 * registry's client. ID tokens carry the accounts' claims (email,
 * email_verified, groups) and are signed with a fresh RS256 or ES256 key.
 * `npm run idp` runs one for `wrangler dev` (scripts/idp.ts).
 */

export interface IdpAccount {
  /** What to type as the login on the provider's page (the `sub`). */
  login: string;
  email?: string;
  email_verified?: boolean;
  groups?: string[];
  name?: string;
}

export interface IdpOptions {
  port: number;
  clientId: string;
  /** Omit for a public client (PKCE only, token_endpoint_auth_method none). */
  clientSecret?: string;
  /** The registry's callback, e.g. https://localhost:8787/oauth/callback. */
  redirectUris: string[];
  accounts: IdpAccount[];
  /** The ID token signing algorithm (default RS256). */
  alg?: 'RS256' | 'ES256';
}

export interface RunningIdp {
  issuer: string;
  stop(): Promise<void>;
}

export async function startIdp(options: IdpOptions): Promise<RunningIdp> {
  const alg = options.alg ?? 'RS256';
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg, use: 'sig', kid: `local-${alg.toLowerCase()}-${Date.now().toString(36)}` };
  const accounts = new Map(options.accounts.map((account) => [account.login, account]));
  const issuer = `http://127.0.0.1:${options.port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: options.clientId,
        ...(options.clientSecret ? { client_secret: options.clientSecret } : { token_endpoint_auth_method: 'none' }),
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        id_token_signed_response_alg: alg,
      },
    ],
    jwks: { keys: [jwk] },
    claims: { openid: ['sub', 'groups'], email: ['email', 'email_verified'], profile: ['name'] },
    // Claims of the requested scopes go into the ID token (the registry reads no userinfo).
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    cookies: { keys: ['local-idp-cookie-key-not-a-secret'] },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx: unknown, id: string) {
      const account = accounts.get(id);
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          return { sub: id, email: account.email, email_verified: account.email_verified, groups: account.groups, name: account.name };
        },
      };
    },
    // First-party client: consent is implied, so the person only signs in.
    async loadExistingGrant(ctx: {
      oidc: {
        client: { clientId: string };
        session: { accountId: string; grantIdFor(id: string): string | undefined };
        result?: { consent?: { grantId?: string } };
        provider: Provider & { Grant: { find(id: string): Promise<unknown> } };
      };
    }) {
      const existing = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (existing) return ctx.oidc.provider.Grant.find(existing);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
  });
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  return {
    issuer,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
