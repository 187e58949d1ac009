import { env } from 'cloudflare:workers';
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { base64url, importJWK, SignJWT } from 'jose';
import { describe, expect, inject, it } from 'vitest';
import { parsePublisherInput } from '../../../src/access/publishers';
import { writePublishers } from '../../../src/store/publishers/write';
import worker from '../../../src/index';
import type { Env } from '../../../src/env';
import { REFUSALS_PER_WINDOW, UNVERIFIED_PER_WINDOW } from '../../../src/routes/publish/refusal-audit';
import { listAuditEntries } from '../../../src/store/audit/read';
import type { BlobStore } from '../../../src/store/store';
import { HOST, issue } from './api';

/**
 * Anyone can send CI ID tokens that do not verify, as many as they like:
 * those refusals must not fill the audit log. The first UNVERIFIED_PER_WINDOW
 * of a window are audited one by one, the rest counted into one summary entry
 * at the window's end (the window is 2 s here instead of 60 s); refusals of a
 * verified credential are still audited one by one.
 */
const WINDOW = { AUDIT_REFUSAL_WINDOW_SECONDS: '2' } as Partial<Env>;

/** A JWT nobody signed, claiming to be a GitHub job of `repository` (an issuer namespace "flood" does not trust). */
const forged = (repository: string) =>
  [
    base64url.encode(JSON.stringify({ alg: 'RS256', kid: 'x' })),
    base64url.encode(
      JSON.stringify({
        iss: 'https://token.actions.githubusercontent.com',
        aud: HOST,
        sub: `repo:${repository}:ref:refs/tags/v1.0.0`,
        repository,
        iat: 1,
        exp: 4102444800,
      }),
    ),
    base64url.encode('not a signature'),
  ].join('.');

async function post(credential: string, namespace = 'flood', window: Partial<Env> = WINDOW): Promise<{ status: number; ctx: ExecutionContext }> {
  const ctx = createExecutionContext();
  const request = new Request(`https://${HOST}/v1/publish/providers/${namespace}/thing/1.0.0`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: '{"files": []}',
  });
  const response = await worker.fetch(request as never, { ...env, ...window } as Env, ctx);
  await response.arrayBuffer();
  return { status: response.status, ctx };
}

const refusals = async (namespace = 'flood') =>
  (await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace })).entries.filter((e) => e.outcome === 'refused');

describe('refusals of unverified CI ID tokens', () => {
  it("a flood of forged tokens writes at most one window's worth of entries plus one summary; verified refusals are all written", {
    timeout: 30_000,
  }, async () => {
    const flood = 25;
    const sent = [];
    for (let i = 0; i < flood; i++) sent.push(await post(forged(`evil/repo-${i % 3}`)));
    expect(sent.map((s) => s.status)).toEqual(Array(flood).fill(401));
    // The window's first entries, one by one, naming what each token claimed.
    const early = await refusals();
    expect(early.length).toBe(UNVERIFIED_PER_WINDOW);
    expect(early.every((e) => e.actor.kind === 'ci' && /not trusted/.test(e.reason ?? ''))).toBe(true);

    // A refused read token is a verified credential: audited one by one even now.
    const reader = await issue('read', ['flood']);
    expect((await post(reader.token)).status).toBe(403);
    expect((await refusals()).filter((e) => e.actor.kind === 'token')).toHaveLength(1);

    // At the window's end, one summary of the other 15.
    await Promise.all(sent.map((s) => waitOnExecutionContext(s.ctx)));
    const after = await refusals();
    const summaries = after.filter((e) => /more refusals of unverified CI ID tokens/.test(e.reason ?? ''));
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!.reason).toContain(`${flood - UNVERIFIED_PER_WINDOW} more refusals`);
    expect(summaries[0]!.reason).toMatch(/evil\/repo|flood\/thing/);
    expect(after.filter((e) => e.actor.kind === 'ci')).toHaveLength(UNVERIFIED_PER_WINDOW + 1);

    // A later window audits one by one again.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await post(forged('evil/late'))).status).toBe(401);
    expect((await refusals()).filter((e) => e.actor.kind === 'ci')).toHaveLength(UNVERIFIED_PER_WINDOW + 2);
  });
});

describe('refusals of genuine CI ID tokens that no publisher allows', () => {
  it('a flood of 300 genuine tokens of other repositories: at most REFUSALS_PER_WINDOW entries + one summary per window, every refusal accounted for', {
    timeout: 120_000,
  }, async () => {
    const { github } = inject('ciIssuers');
    await writePublishers({ kv: env.REGISTRY_KV as never, blobs: env.REGISTRY_R2 as never }, HOST, 'genuine', [
      await parsePublisherInput({
        issuer: github.url,
        repository: 'acme/terraform-provider-thing',
        workflow: 'release.yml',
        ref: 'refs/tags/v*',
        repositoryId: '1',
        ownerId: '2',
        namespaceWide: true,
      }),
    ]);
    // Signed by the issuer for attackers' own repositories, with our audience: each verifies, none matches.
    const key = await importJWK(github.privateJwk, github.alg);
    const now = Math.floor(Date.now() / 1000);
    const flood = 300;
    const tokens = await Promise.all(
      Array.from({ length: flood }, (_, i) => {
        const repository = `attacker-${i % 7}/terraform-provider-thing`;
        return new SignJWT({
          iss: github.url,
          aud: HOST,
          iat: now,
          nbf: now,
          exp: now + 600,
          jti: crypto.randomUUID(),
          sub: `repo:${repository}:ref:refs/tags/v1`,
          repository,
          repository_id: String(1000 + i),
          repository_owner_id: String(2000 + (i % 7)),
          ref: 'refs/tags/v1',
          workflow_ref: `${repository}/.github/workflows/release.yml@refs/tags/v1`,
        })
          .setProtectedHeader({ alg: github.alg, kid: github.kid })
          .sign(key);
      }),
    );
    const windowSeconds = 10;
    const started = Date.now();
    const sent = [];
    for (const token of tokens) sent.push(await post(token, 'genuine', { AUDIT_REFUSAL_WINDOW_SECONDS: String(windowSeconds) } as Partial<Env>));
    const elapsed = Date.now() - started;
    expect(sent.every((s) => s.status === 403)).toBe(true);
    await Promise.all(sent.map((s) => waitOnExecutionContext(s.ctx)));

    const entries = await refusals('genuine');
    const summaries = entries.filter((e) => /more refusals of genuine CI ID tokens no trusted publisher allows/.test(e.reason ?? ''));
    const single = entries.filter((e) => !summaries.includes(e));
    const windows = Math.floor(elapsed / (windowSeconds * 1000)) + 1;
    // The bound: per window, REFUSALS_PER_WINDOW one by one and one summary (the window is under SUMMARY_MAX_WAIT_MS).
    expect(single.length).toBeLessThanOrEqual(windows * REFUSALS_PER_WINDOW);
    expect(summaries.length).toBeLessThanOrEqual(windows);
    expect(entries.length).toBeLessThan(flood / 10);
    // Nothing lost: the summaries count every refusal not written one by one, per issuer and subject.
    const counted = summaries.reduce((n, e) => n + Number(/^(\d+) more refusals/.exec(e.reason ?? '')?.[1]), 0);
    expect(single.length + counted).toBe(flood);
    expect(summaries[0]!.reason).toMatch(
      new RegExp(`Issuer and subject: ${github.url.replace(/[.]/g, '\\.')} repo:attacker-\\d/terraform-provider-thing:ref:refs/tags/v1 ×\\d+`),
    );
    expect(single.every((e) => e.actor.kind === 'ci' && /matches none of the trusted publishers/.test(e.reason ?? ''))).toBe(true);
  });
});

describe('refusals of tokens of this registry (ert_…)', () => {
  it('a flood of an expired publish token and a read token: at most REFUSALS_PER_WINDOW entries one by one + summaries per window, every refusal counted', {
    timeout: 60_000,
  }, async () => {
    const expired = await issue('publish', ['stale'], { expires: '2020-01-01T00:00:00.000Z', name: 'leaked' });
    const reader = await issue('read', ['stale'], { name: 'reader' });
    const flood = 40;
    const windowSeconds = 3;
    const started = Date.now();
    const sent = [];
    for (let i = 0; i < flood; i++) {
      const token = i % 2 === 0 ? expired.token : reader.token;
      sent.push(await post(token, 'stale', { AUDIT_REFUSAL_WINDOW_SECONDS: String(windowSeconds) } as Partial<Env>));
    }
    const elapsed = Date.now() - started;
    expect(sent.map((s) => s.status)).toEqual(Array.from({ length: flood }, (_, i) => (i % 2 === 0 ? 401 : 403)));
    await Promise.all(sent.map((s) => waitOnExecutionContext(s.ctx)));

    const entries = await refusals('stale');
    const summaries = entries.filter((e) => /more refusals of tokens of this registry/.test(e.reason ?? ''));
    const single = entries.filter((e) => !summaries.includes(e));
    const windows = Math.floor(elapsed / (windowSeconds * 1000)) + 1;
    expect(single.length).toBeLessThanOrEqual(windows * REFUSALS_PER_WINDOW);
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    expect(summaries.length).toBeLessThanOrEqual(windows);
    expect(entries.length).toBeLessThan(flood);
    // Nothing lost: one by one or counted in a summary, naming the tokens by id.
    const counted = summaries.reduce((n, e) => n + Number(/^(\d+) more refusals/.exec(e.reason ?? '')?.[1]), 0);
    expect(single.length + counted).toBe(flood);
    expect(summaries[0]!.reason).toContain(`token ${expired.id} (leaked) ×`);
    expect(summaries[0]!.reason).toContain(`token ${reader.id} (reader) ×`);
    expect(single.every((e) => e.actor.kind === 'token')).toBe(true);
  });
});
