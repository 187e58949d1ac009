import type { Env } from '../env';
import { parsePolicy, PolicyError, type LoginPolicy } from './policy';

/**
 * Sign-in settings from OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET and
 * LOGIN_POLICY, parsed once per Env (src/config.ts). Without OIDC_ISSUER the
 * registry has no login at all (null). A configuration problem does not
 * throw: it is kept as `problem`, so login answers 503 naming it while the
 * rest of the registry keeps serving — and nobody is ever let in by a
 * default.
 */
export interface OidcSettings {
  /** The issuer URL exactly as configured (no trailing-slash normalisation: `iss` must equal it). */
  issuer: string;
  clientId: string;
  /** '' for a public client (PKCE only). */
  clientSecret: string;
  /** True when the issuer is http on a loopback address (local development and tests only). */
  insecureLoopback: boolean;
  /** The parsed policy, or null when `problem` is set. */
  policy: LoginPolicy | null;
  /** What is wrong with the configuration (shown on the 503 page and logged), or null. */
  problem: string | null;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Parses the OIDC settings; null when OIDC_ISSUER is unset or empty. Never throws. */
export function parseOidcSettings(env: Env): OidcSettings | null {
  const issuer = (env.OIDC_ISSUER ?? '').trim();
  if (issuer === '') return null;
  const clientId = (env.OIDC_CLIENT_ID ?? '').trim();
  const clientSecret = env.OIDC_CLIENT_SECRET ?? '';
  let insecureLoopback = false;
  let problem: string | null = null;
  let url: URL | null = null;
  try {
    url = new URL(issuer);
  } catch {
    problem = `OIDC_ISSUER "${issuer}" is not a URL`;
  }
  if (url) {
    if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) insecureLoopback = true;
    else if (url.protocol !== 'https:') problem = 'OIDC_ISSUER must be an https URL (http only on localhost, for local development)';
    else if (url.username || url.password || url.search || url.hash) problem = 'OIDC_ISSUER must not carry user info, a query or a fragment';
  }
  if (!problem && clientId === '') problem = 'OIDC_CLIENT_ID is not set (the client id registered at the identity provider)';
  if (!problem && !env.URL_SIGNING_SECRET) problem = 'URL_SIGNING_SECRET is not set; sign-in seals its state and sessions with it';
  let policy: LoginPolicy | null = null;
  if (!problem) {
    try {
      policy = parsePolicy(env.LOGIN_POLICY);
    } catch (error) {
      if (!(error instanceof PolicyError)) throw error;
      problem = error.message;
    }
  }
  return { issuer, clientId, clientSecret, insecureLoopback, policy, problem };
}
