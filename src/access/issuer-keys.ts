import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey } from 'jose';
import { parseAllowedUrl } from './issuer-url';

/**
 * The signing keys of a trusted OpenID Connect issuer (a CI's token service),
 * found the standard way and cached per isolate: discovery
 * (`ISSUER/.well-known/openid-configuration`, whose `issuer` must equal the
 * issuer and whose `jwks_uri` must be https, or http on loopback) names the
 * JWKS; jose's remote JWKS set caches it (10 min), refetches it when a token
 * names a `kid` it does not hold (key rotation) at most once per cooldown, and
 * times out slow answers. Only issuers a namespace's trusted publishers name
 * are ever fetched (ci-token.ts checks `iss` first), so a token cannot make
 * the Worker fetch an arbitrary URL.
 *
 * Cost: a cold isolate makes 2 subrequests (discovery + JWKS) per issuer;
 * warm ones none until the JWKS cache expires.
 */

export class IssuerUnavailableError extends Error {
  constructor(
    readonly issuer: string,
    detail: string,
  ) {
    super(`the issuer ${issuer} could not be reached or answered unusably (${detail}); try again later`);
    this.name = 'IssuerUnavailableError';
  }
}

export interface IssuerKeyCacheOptions {
  /** How long a discovery document is reused (ms, default 1 hour). */
  discoveryTtlMs?: number;
  /** Least time between two JWKS fetches for an unknown `kid` (ms, default 30 s, jose's default). */
  cooldownMs?: number;
  /** How long a fetched JWKS is reused before it is fetched again (ms, default 10 min). */
  jwksMaxAgeMs?: number;
  /** Per-request timeout (ms, default 5 s). */
  timeoutMs?: number;
  /** fetch to use (tests); default the global one. */
  fetch?: typeof fetch;
}

interface Entry {
  keys: JWTVerifyGetKey;
  discoveredAt: number;
}

const MAX_DISCOVERY_BYTES = 64 * 1024;

export class IssuerKeyCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<Entry>>();

  constructor(private readonly options: IssuerKeyCacheOptions = {}) {}

  /**
   * The key getter of `issuer` (canonical form, see issuer-url.ts) for
   * jose's jwtVerify. Throws IssuerUnavailableError when discovery fails
   * (network, status, not JSON, `issuer` mismatch, a disallowed `jwks_uri`).
   */
  async keys(issuer: string, now = Date.now()): Promise<JWTVerifyGetKey> {
    const cached = this.entries.get(issuer);
    if (cached && now - cached.discoveredAt < (this.options.discoveryTtlMs ?? 3_600_000)) return cached.keys;
    let pending = this.pending.get(issuer);
    if (!pending) {
      pending = this.discover(issuer, now).finally(() => this.pending.delete(issuer));
      this.pending.set(issuer, pending);
    }
    return (await pending).keys;
  }

  private async discover(issuer: string, now: number): Promise<Entry> {
    const fetchImpl = this.options.fetch ?? fetch;
    const timeoutMs = this.options.timeoutMs ?? 5000;
    let document: Record<string, unknown>;
    try {
      const response = await fetchImpl(`${issuer}/.well-known/openid-configuration`, {
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
        headers: { accept: 'application/json' },
      });
      if (response.status !== 200) throw new Error(`discovery answered ${response.status}`);
      const body = await response.text();
      if (body.length > MAX_DISCOVERY_BYTES) throw new Error('discovery document over 64 KB');
      const parsed = JSON.parse(body) as unknown;
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('discovery document is not a JSON object');
      document = parsed as Record<string, unknown>;
    } catch (error) {
      throw new IssuerUnavailableError(issuer, (error as Error).message.slice(0, 200));
    }
    if (document.issuer !== issuer) throw new IssuerUnavailableError(issuer, `its discovery document names issuer ${JSON.stringify(document.issuer)}`);
    if (typeof document.jwks_uri !== 'string') throw new IssuerUnavailableError(issuer, 'its discovery document has no jwks_uri');
    let jwksUri: URL;
    try {
      jwksUri = parseAllowedUrl(document.jwks_uri, 'jwks_uri');
    } catch (error) {
      throw new IssuerUnavailableError(issuer, (error as Error).message);
    }
    const keys = createRemoteJWKSet(jwksUri, {
      cooldownDuration: this.options.cooldownMs ?? 30_000,
      cacheMaxAge: this.options.jwksMaxAgeMs ?? 600_000,
      timeoutDuration: timeoutMs,
      ...(this.options.fetch ? { [customFetch]: this.options.fetch } : {}),
    });
    const entry = { keys, discoveredAt: now };
    this.entries.set(issuer, entry);
    return entry;
  }
}

/** The isolate's cache, shared by every request it serves. */
export const issuerKeys = new IssuerKeyCache();
