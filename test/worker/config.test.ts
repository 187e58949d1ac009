import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { ConfigError, configProblems, settings } from '../../src/config';
import type { Env } from '../../src/env';
import { withArchiveBase, withReleaseUrls } from '../../src/access/release-urls';

const base = { ...env } as Env;
const with_ = (overrides: Partial<Record<keyof Env, unknown>>) => ({ ...base, ...overrides }) as Env;

describe('settings', () => {
  it('are parsed once per Env object', () => {
    const e = with_({});
    expect(settings(e)).toBe(settings(e));
    expect(settings(with_({}))).not.toBe(settings(e));
  });

  it("read wrangler.toml's variables into typed values", () => {
    const s = settings(
      with_({
        REGISTRY_HOSTNAME: 'Registry.Example.com',
        ACCESS: 'public',
        INDEX_CACHE_SECONDS: '30',
        ARCHIVE_BASE_URL: 'https://dl.example.com//',
        SIGNED_URL_MINUTES: '60',
        GZIP_DOCUMENTS: 'true',
        URL_SIGNING_SECRET: 's'.repeat(32),
        SIGNING_KEY_SECRET: 'k'.repeat(32),
        PULL_TIMEOUT_SECONDS: '2',
        PULL_REFRESH_SECONDS: '3',
        PULL_LIST_SECONDS: '4',
        AUDIT_REFUSAL_WINDOW_SECONDS: '5',
        DOWNLOAD_BATCH_MS: '250',
        MODULE_PROXY_MAX_MB: '1.5',
      }),
    );
    expect(s).toEqual({
      hostname: 'registry.example.com',
      access: 'public',
      listTtlMs: 30_000,
      listCacheControl: 'public, max-age=30',
      releaseDocumentCacheControl: 'public, max-age=31536000, immutable',
      archiveBaseUrl: 'https://dl.example.com',
      signedUrlMinutes: 60,
      r2Files: null,
      publicDocuments: null,
      signingSecret: 's'.repeat(32),
      gzipDocuments: true,
      oidc: null,
      signingKeySecret: 'k'.repeat(32),
      pullTimeoutMs: 2000,
      pullRefreshMs: 3000,
      pullListMs: 4000,
      auditRefusalWindowMs: 5000,
      downloadBatchMs: 250,
      moduleProxyMaxBytes: 1_572_864,
      problems: [],
    });
  });

  it('refuse a secret shorter than 32 characters, naming it: listed in problems, and never handed out (ConfigError, a 503 on the routes that need it)', () => {
    const s = settings(with_({ URL_SIGNING_SECRET: 'x'.repeat(31) }));
    expect(s.problems.map((p) => p.setting)).toEqual(['URL_SIGNING_SECRET']);
    expect(() => s.signingSecret).toThrow(ConfigError);
    expect(() => s.signingSecret).toThrow(/^URL_SIGNING_SECRET is 31 characters; at least 32 are required: generate one with `openssl rand -base64 32`/);
    expect(s.access).toBe('public'); // the rest is usable (wrangler.toml's ACCESS)
    expect(() => settings(with_({ SIGNING_KEY_SECRET: 'short' })).signingKeySecret).toThrow(/SIGNING_KEY_SECRET is 5 characters; at least 32/);
    expect(settings(with_({ URL_SIGNING_SECRET: 'x'.repeat(32), SIGNING_KEY_SECRET: '' })).signingSecret).toBe('x'.repeat(32));
    // Never the value in a problem's message.
    const secret = 'y'.repeat(20);
    expect(JSON.stringify(settings(with_({ URL_SIGNING_SECRET: secret })).problems)).not.toContain(secret);
  });

  it("configProblems: the same parser on plain variables (the scripts' pre-flight), every problem with its setting", () => {
    expect(configProblems({ REGISTRY_HOSTNAME: 'registry.example.com' })).toEqual([]);
    const problems = configProblems({
      REGISTRY_HOSTNAME: 'not a host',
      URL_SIGNING_SECRET: 'short',
      SIGNING_KEY_SECRET: 'k'.repeat(32),
      OIDC_ISSUER: 'https://id.example.com',
      OIDC_CLIENT_ID: 'registry',
      LOGIN_POLICY: '{"rules":[{"if":{"constructor":"x"},"scopes":["*"]}]}',
    });
    expect(problems.map((p) => p.setting)).toEqual(['REGISTRY_HOSTNAME', 'URL_SIGNING_SECRET', 'LOGIN_POLICY']);
    expect(problems[2]!.message).toContain('"constructor" cannot be a claim name');
    expect(configProblems({ REGISTRY_HOSTNAME: 'r.example.com', OIDC_ISSUER: 'http://id.example.com', OIDC_CLIENT_ID: 'x' })[0]!.setting).toBe('OIDC_ISSUER');
  });

  it('fail closed or fall back to defaults on malformed values', () => {
    const s = settings(
      with_({ ACCESS: 'Public', INDEX_CACHE_SECONDS: 'soon', SIGNED_URL_MINUTES: '-1', GZIP_DOCUMENTS: 'yes', URL_SIGNING_SECRET: undefined }),
    );
    expect(s.access).toBe('private');
    expect(s.listCacheControl).toBe('private, max-age=5');
    expect(s.releaseDocumentCacheControl).toBe('private, no-store');
    expect([s.listTtlMs, s.signedUrlMinutes, s.gzipDocuments, s.signingSecret]).toEqual([5000, 15, false, '']);
    // null: the feature's own default (pull-through timeouts, the audit refusal window, the download batch window).
    const t = settings(
      with_({
        PULL_TIMEOUT_SECONDS: 'soon',
        PULL_REFRESH_SECONDS: '0',
        PULL_LIST_SECONDS: undefined,
        AUDIT_REFUSAL_WINDOW_SECONDS: '7200',
        DOWNLOAD_BATCH_MS: '-1',
        MODULE_PROXY_MAX_MB: 'big',
      }),
    );
    expect([t.pullTimeoutMs, t.pullRefreshMs, t.pullListMs, t.auditRefusalWindowMs, t.downloadBatchMs, t.moduleProxyMaxBytes]).toEqual([
      null,
      null,
      null,
      null,
      null,
      null,
    ]);
    expect(settings(with_({ DOWNLOAD_BATCH_MS: '0' })).downloadBatchMs).toBe(0);
  });

  it('refuse a REGISTRY_HOSTNAME that is not a hostname, naming the variable, when it is read', () => {
    const s = settings(with_({ REGISTRY_HOSTNAME: 'not a host' }));
    expect(() => s.hostname).toThrow(ConfigError);
    expect(() => s.hostname).toThrow(/^REGISTRY_HOSTNAME in wrangler.toml: hostname "not a host"/);
    expect(s.problems.map((p) => p.setting)).toEqual(['REGISTRY_HOSTNAME']);
  });
});

describe('release URLs as served', () => {
  const body = '{"download_url":"/v1/archives/h/n/t/1.0.0/f.zip","os":"/v1/archives/"}';

  it('are made absolute on ARCHIVE_BASE_URL, and left path-absolute without it', () => {
    expect(withArchiveBase(body, with_({ ARCHIVE_BASE_URL: 'https://dl.example.com/' }))).toBe(
      '{"download_url":"https://dl.example.com/v1/archives/h/n/t/1.0.0/f.zip","os":"https://dl.example.com/v1/archives/"}',
    );
    expect(withArchiveBase(body, with_({ ARCHIVE_BASE_URL: '' }))).toBe(body);
  });

  it('are signed in private mode, then made absolute', async () => {
    const served = await withReleaseUrls(
      '{"u":"/v1/archives/h/n/t/1.0.0/f.zip"}',
      with_({ ACCESS: 'private', URL_SIGNING_SECRET: 'k'.repeat(32), ARCHIVE_BASE_URL: 'https://dl.example.com' }),
    );
    expect(served).toMatch(/^\{"u":"https:\/\/dl\.example\.com\/v1\/archives\/h\/n\/t\/1\.0\.0\/f\.zip\?expires=\d+&signature=[A-Za-z0-9_-]{43}"\}$/);
  });

  it('in private mode without URL_SIGNING_SECRET: an error, never an unsigned URL', async () => {
    const served = Promise.resolve().then(() => withReleaseUrls('{"u":"/v1/archives/x"}', with_({ ACCESS: 'private', URL_SIGNING_SECRET: '' })));
    await expect(served).rejects.toThrow(/URL_SIGNING_SECRET is not set/);
  });
});
