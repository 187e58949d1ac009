import { InputError } from '../protocol/errors';

/**
 * The URL rules for an OpenID Connect issuer the registry trusts (a CI's
 * token service) and for the URLs its discovery document names: https, or
 * http only on a loopback host (127.0.0.0/8, ::1, localhost) for local
 * development and tests. No user-info, query or fragment.
 */

/** True when `hostname` (as URL.hostname gives it) is a loopback name or address. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Parses an issuer URL given by an operator (`npm run publisher -- add
 * --issuer …`) or read from storage, into its canonical form: scheme and host
 * lower case, no trailing slash (`https://gitlab.com/` → `https://gitlab.com`),
 * which is how issuers write their `iss` claim. Throws InputError naming
 * `what` and the fix for anything else.
 */
export function parseIssuerUrl(raw: string, what = 'issuer'): string {
  const url = parseAllowedUrl(raw, what);
  if (url.search || url.hash || raw.includes('?') || raw.includes('#')) throw new InputError(`${what} "${raw}" must not have a query or fragment`);
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/**
 * Checks a URL named by an issuer's discovery document (its `jwks_uri`):
 * same rules as the issuer. Returns the URL; throws InputError naming `what`.
 */
export function parseAllowedUrl(raw: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InputError(`${what} "${raw}" is not a URL; give the issuer's base URL, e.g. https://token.actions.githubusercontent.com`);
  }
  if (url.username || url.password) throw new InputError(`${what} "${raw}" must not carry a user name or password`);
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return url;
  if (url.protocol === 'http:')
    throw new InputError(`${what} "${raw}" must use https (http is accepted only on a loopback host, for local development and tests)`);
  throw new InputError(`${what} "${raw}" must be an https URL`);
}
