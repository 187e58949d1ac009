import { describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../../src/access/session';
import { sealPersonSession } from '../../../src/access/person-session';
import { appendAuditEntry } from '../../../src/store/audit/write';
import type { BlobStore } from '../../../src/store/store';
import { env, getWith, issueToken } from '../helpers';
import { oidcEnv } from './helpers';

// /audit: the audit log, read-only, for admins signed in with SSO; escaped, never cached, under the CSP.

const config = oidcEnv();
const person = (subject: string) => ({ issuer: 'http://127.0.0.1:9', subject, email: `${subject}@acme.com` });

async function cookieOf(subject: string, admin: boolean): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return `${SESSION_COOKIE}=${await sealPersonSession(env, { person: person(subject), scopes: ['acme'], admin, expires: now + 600, issued: now - 5 })}`;
}

describe('/audit', () => {
  it('lists recent entries newest first for an admin: escaped, filtered by namespace, no secret, never cached', async () => {
    const blobs = env.REGISTRY_R2 as unknown as BlobStore;
    const {
      record: { id },
    } = await issueToken(['acme']);
    await appendAuditEntry(
      { blobs },
      {
        actor: { kind: 'token', tokenId: id, name: 'release' },
        action: 'provider.publish',
        target: 'registry.example.com/acme/thing 1.0.0',
        outcome: 'ok',
        time: new Date(Date.now() - 60_000).toISOString(),
      },
    );
    await appendAuditEntry(
      { blobs },
      {
        actor: { kind: 'ci', issuer: 'https://token.actions.githubusercontent.com', subject: 'repo:evil/x', repository: 'evil/<b>x</b>' },
        action: 'provider.publish',
        target: 'registry.example.com/acme/thing 1.1.0',
        outcome: 'refused',
        reason: 'not trusted <script>alert(1)</script>',
        time: new Date(Date.now() - 30_000).toISOString(),
      },
    );
    await appendAuditEntry({ blobs }, { actor: { kind: 'operator', via: 'remote' }, action: 'key.add', target: 'registry.example.com/other', outcome: 'ok' });

    const response = await getWith(config, '/audit', { headers: { cookie: await cookieOf('admin', true), accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('private, no-store');
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await response.text();
    expect(page).toContain(`token ${id} (release)`);
    expect(page).toContain('not trusted &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).not.toContain('<script>alert');
    expect(page).toContain('evil/&lt;b&gt;x&lt;/b&gt;');
    expect(page).not.toMatch(/ert_[A-Za-z0-9_-]{43}/);
    // Newest first.
    expect(page.indexOf('key.add')).toBeLessThan(page.indexOf('thing 1.1.0'));
    expect(page.indexOf('thing 1.1.0')).toBeLessThan(page.indexOf('thing 1.0.0'));

    const acme = await (await getWith(config, '/audit?namespace=acme&days=1', { headers: { cookie: await cookieOf('admin', true) } })).text();
    expect(acme).toContain('thing 1.0.0');
    expect(acme).not.toContain('registry.example.com/other');
    // Only the writes that happened: a flood of refusals never hides them.
    const ok = await (await getWith(config, '/audit?outcome=ok', { headers: { cookie: await cookieOf('admin', true) } })).text();
    expect(ok).toContain('thing 1.0.0');
    expect(ok).toContain('key.add');
    expect(ok).not.toContain('thing 1.1.0');
    expect(ok).toContain('<option value="ok" selected>');
    expect((await getWith(config, '/audit?outcome=bogus', { headers: { cookie: await cookieOf('admin', true) } })).status).toBe(400);
    expect((await getWith(config, '/audit?days=99', { headers: { cookie: await cookieOf('admin', true) } })).status).toBe(400);
    expect((await getWith(config, '/audit?namespace=Bad..NS', { headers: { cookie: await cookieOf('admin', true) } })).status).toBe(400);
  });

  it('is refused to people who are not admins (403) and sends others to sign in; it only reads (GET)', async () => {
    const notAdmin = await getWith(config, '/audit', { headers: { cookie: await cookieOf('bob', false), accept: 'text/html' } });
    expect(notAdmin.status).toBe(403);
    expect(await notAdmin.text()).not.toContain('provider.publish');
    const anonymous = await getWith(config, '/audit', { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe('/login?next=/audit');
    expect((await getWith(config, '/audit', { method: 'POST', headers: { cookie: await cookieOf('admin', true) } })).status).toBe(405);
  });

  it("escapes control characters of a refused CI token's claims (an ESC sequence is shown as \\x1b, never sent raw)", async () => {
    const blobs = env.REGISTRY_R2 as unknown as BlobStore;
    await appendAuditEntry(
      { blobs },
      {
        actor: { kind: 'ci', issuer: 'https://token.actions.githubusercontent.com', subject: 'repo:x\u001b]0;pwned\u0007', repository: 'x\u001b[2J' },
        action: 'provider.publish',
        target: 'registry.example.com/esc/thing 1.0.0',
        outcome: 'refused',
        reason: 'no trusted publisher matches repository x\u001b[2J\u202e',
      },
    );
    const page = await (await getWith(config, '/audit?namespace=esc&days=1', { headers: { cookie: await cookieOf('admin', true) } })).text();
    expect(page).toContain('thing 1.0.0');
    expect(page).toContain('x\\x1b[2J');
    expect(page).toContain('repo:x\\x1b]0;pwned\\x07');
    expect(page).toContain('\\u202e');
    expect(page).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/);
  });

  it('pages through a window larger than a page: an "Older entries" link with the cursor, each entry on one page only', async () => {
    const blobs = env.REGISTRY_R2 as unknown as BlobStore;
    const base = Date.now() - 3_600_000;
    for (let i = 0; i < 205; i += 41)
      await Promise.all(
        Array.from({ length: 41 }, (_, j) =>
          appendAuditEntry(
            { blobs },
            {
              actor: { kind: 'operator', via: 'local' },
              action: 'key.add',
              target: `registry.example.com/paged${i + j}`,
              outcome: 'ok',
              time: new Date(base + (i + j) * 1000).toISOString(),
            },
          ),
        ),
      );
    const cookie = await cookieOf('admin', true);
    const first = await (await getWith(config, '/audit?days=1&outcome=ok', { headers: { cookie } })).text();
    const link = /<a href="([^"]+)" rel="next">Older entries<\/a>/.exec(first);
    expect(link).not.toBeNull();
    expect(first).toContain('registry.example.com/paged204<');
    const older = await (await getWith(config, link![1]!.replaceAll('&amp;', '&'), { headers: { cookie } })).text();
    const shown = (text: string) => [...text.matchAll(/registry\.example\.com\/paged(\d+)</g)].map((m) => Number(m[1]));
    expect(shown(first).length).toBeGreaterThan(190); // 200 a page, newer entries of the other tests among them
    expect(new Set([...shown(first), ...shown(older)]).size).toBe(205);
    expect(shown(older)).toEqual(expect.arrayContaining([0, 1, 2, 3, 4]));
    expect(shown(first).filter((n) => shown(older).includes(n))).toEqual([]);
    expect((await getWith(config, '/audit?before=..%2Fsecrets', { headers: { cookie } })).status).toBe(400);
  });
});
