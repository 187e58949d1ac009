import { describe, expect, it } from 'vitest';
import { scopeGrants } from '../../src/access/scope';
import { signedPathInWindow, signingWindow, verifySignedUrl } from '../../src/access/signed-urls';

// What the read path keeps in the isolate so that a repeat request does less work (issue 38): a grant string taken
// apart once per form, a package pattern compiled once, a module package's signed URL once per signing window.
// Kept work must decide exactly as fresh work would.

const OWN = 'registry.example.com';

describe('grants taken apart once', () => {
  it('the same string is read by the grammar of the form it is stored in, whichever form came first', () => {
    const read = { hostname: 'other.example', namespace: 'acme' };
    expect(scopeGrants(['*'], 'read', read, OWN)).toBe(true);
    expect(scopeGrants(['*'], 'namespace', read, OWN)).toBe(false);
    const write = { hostname: OWN, namespace: 'acme', package: ['thing'] };
    expect(scopeGrants(['acme'], 'read', { hostname: OWN, namespace: 'acme' }, OWN)).toBe(true);
    expect(scopeGrants(['acme'], 'package', write, OWN)).toBe(false);
    expect(scopeGrants(['acme/thing'], 'package', write, OWN)).toBe(true);
    expect(scopeGrants(['acme/thing'], 'read', { hostname: 'acme', namespace: 'thing' }, OWN)).toBe(true);
  });

  it('a compiled pattern matches as before, each time, and never another pattern’s parts', () => {
    const place = (type: string) => ({ hostname: OWN, namespace: 'acme', package: [type] });
    for (let round = 0; round < 3; round++) {
      expect(scopeGrants(['acme/thing-*'], 'package', place('thing-aws'), OWN)).toBe(true);
      expect(scopeGrants(['acme/thing-*'], 'package', place('other'), OWN)).toBe(false);
      expect(scopeGrants(['acme/*-aws'], 'package', place('thing-aws'), OWN)).toBe(true);
      expect(scopeGrants(['acme/*-aws'], 'package', place('thing-gcp'), OWN)).toBe(false);
      expect(scopeGrants(['acme/t.ing'], 'package', place('txing'), OWN)).toBe(false);
      expect(scopeGrants(['acme/other-*'], 'package', place('thing-aws'), OWN)).toBe(false);
      expect(scopeGrants(['acme/thing-*', 'acme/other-*'], 'package', place('other-aws'), OWN)).toBe(true);
    }
  });
});

describe('a module package URL signed once per signing window', () => {
  const config = { signingSecret: 'kept-checks-secret-0123456789abcdef', signedUrlMinutes: 15 };
  const path = '/v1/module-archives/registry.example.com/acme/vpc/aws/1.0.0/vpc-aws-1.0.0.tar.gz';
  const verify = (signed: string, settings: { signingSecret: string }, now: number) =>
    verifySignedUrl(new Request(`https://registry.example.com${signed}`), settings, now);

  it('is the same text for the whole window, valid SIGNED_URL_MINUTES from its start, and verifies', async () => {
    const { signedAt, until } = signingWindow(config, Date.now());
    const first = await signedPathInWindow(config, path, signedAt);
    expect(await signedPathInWindow(config, path, until - 1)).toBe(first);
    const expires = Number(new URL(first, 'https://x').searchParams.get('expires'));
    expect(expires).toBe(Math.floor(signedAt / 1000) + 15 * 60);
    expect(await verify(first, config, until - 1)).toEqual({ ok: true, expires });
  });

  it('the next window signs again with a later expiry; another file or secret never gets a kept URL', async () => {
    const { signedAt, until } = signingWindow(config, Date.now());
    const first = await signedPathInWindow(config, path, signedAt);
    const next = await signedPathInWindow(config, path, until);
    const expiry = (signed: string) => Number(new URL(signed, 'https://x').searchParams.get('expires'));
    expect(expiry(next)).toBe(expiry(first) + (until - signedAt) / 1000);
    const other = path.replaceAll('1.0.0', '1.0.1');
    const otherSigned = await signedPathInWindow(config, other, signedAt);
    expect(otherSigned.startsWith(`${other}?`)).toBe(true);
    expect((await verify(otherSigned, config, signedAt)).ok).toBe(true);
    const rotated = { ...config, signingSecret: 'kept-checks-rotated-0123456789abcdef' };
    const afterRotation = await signedPathInWindow(rotated, path, signedAt);
    expect(afterRotation).not.toBe(first);
    expect((await verify(afterRotation, rotated, signedAt)).ok).toBe(true);
    expect((await verify(first, rotated, signedAt)).ok).toBe(false);
  });
});
