import { env } from 'cloudflare:workers';
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { base64url } from 'jose';
import { describe, expect, it } from 'vitest';
import worker from '../../../src/index';
import type { Env } from '../../../src/env';
import { UNVERIFIED_PER_WINDOW } from '../../../src/routes/publish/refusal-audit';
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
const forged = (repository: string) => [
  base64url.encode(JSON.stringify({ alg: 'RS256', kid: 'x' })),
  base64url.encode(JSON.stringify({ iss: 'https://token.actions.githubusercontent.com', aud: HOST, sub: `repo:${repository}:ref:refs/tags/v1.0.0`, repository, iat: 1, exp: 4102444800 })),
  base64url.encode('not a signature'),
].join('.');

async function post(credential: string): Promise<{ status: number; ctx: ExecutionContext }> {
  const ctx = createExecutionContext();
  const request = new Request(`https://${HOST}/v1/publish/providers/flood/thing/1.0.0`, {
    method: 'POST', headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, body: '{"files": []}',
  });
  const response = await worker.fetch(request as never, { ...env, ...WINDOW } as Env, ctx);
  await response.arrayBuffer();
  return { status: response.status, ctx };
}

const refusals = async () => (await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace: 'flood' })).entries
  .filter((e) => e.outcome === 'refused');

describe('refusals of unverified CI ID tokens', () => {
  it('a flood of forged tokens writes at most one window\'s worth of entries plus one summary; verified refusals are all written', { timeout: 30_000 }, async () => {
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
