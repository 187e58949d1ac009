import type { Env } from '../../../src/env';
import { base64url, fromBase64url } from '../../../src/access/crypto/bytes';
import { env } from '../helpers';

/** A policy granting group "platform" the namespace acme, admins by group "registry-admins", 7-day tokens. */
export const POLICY = {
  rules: [
    { if: { groups: 'platform' }, scopes: ['acme'] },
    { if: { email_domain: 'acme.com' }, scopes: ['acme', 'registry.terraform.io/*'] },
  ],
  admins: { groups: 'registry-admins' },
  token_days: 7,
};

/**
 * The private-mode bindings plus sign-in configuration. The issuer is a
 * loopback address nothing listens on: tests that reach the provider say
 * so (they expect the 502 of a provider that is down).
 */
export function oidcEnv(overrides: Partial<Env> = {}): Env {
  return {
    ...env,
    OIDC_ISSUER: 'http://127.0.0.1:9',
    OIDC_CLIENT_ID: 'edge-registry',
    LOGIN_POLICY: JSON.stringify(POLICY),
    ...overrides,
  };
}

/** `text` (base64url) with its LAST decoded byte changed (xor 1), re-encoded canonically: differs only at the end. */
export function lastByteFlipped(text: string): string {
  const bytes = fromBase64url(text);
  if (bytes === null || bytes.byteLength === 0) throw new Error(`not base64url: ${text}`);
  bytes[bytes.byteLength - 1]! ^= 1;
  const flipped = base64url(bytes);
  if (flipped === text || flipped.slice(0, -2) !== text.slice(0, -2)) throw new Error('flip changed more than the end');
  return flipped;
}

/** A lower-case hex string with its last digit changed. */
export const lastHexFlipped = (hex: string) => hex.slice(0, -1) + (hex.endsWith('0') ? '1' : '0');

/** A PKCE pair (RFC 7636 S256). */
export async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  return { verifier, challenge };
}
