import { describe, expect, it } from 'vitest';
import { signReleaseUrls, verifySignedUrl } from '../../src/access/signed-urls';

// What a signature is bound to — method, path, expiry to the second — checked against an HMAC computed
// here with WebCrypto (not the module's own signer), so the signed string's format is pinned too.

const SECRET = { signingSecret: 'test-signing-secret-not-used-anywhere-else', signedUrlMinutes: 15 };
const PATH = '/v1/archives/registry.example.com/acme/thing/1.0.0/terraform-provider-thing_1.0.0_linux_amd64.zip';
const EXPIRES = 1_900_000_000;

/** HMAC-SHA256 over "METHOD\nPATH\nEXPIRES", base64url without padding: the documented signature. */
async function independentSignature(method: string, path: string, expires: number, secret = SECRET.signingSecret): Promise<string> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${method}\n${path}\n${expires}`)));
  return btoa(String.fromCharCode(...mac))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '');
}

const request = (url: string, method = 'GET') => new Request(new URL(url, 'https://registry.example.com'), { method });

describe('signReleaseUrls', () => {
  it('signs each release URL for GET, its exact path and now + 15 minutes (to the second)', async () => {
    const now = (EXPIRES - 15 * 60) * 1000 + 999; // the fraction of a second is dropped, not rounded up
    const body = JSON.stringify({ download_url: PATH, other: '/v1/providers/acme/thing/versions' });
    const signed = JSON.parse(await signReleaseUrls(body, SECRET, now));
    expect(signed.download_url).toBe(`${PATH}?expires=${EXPIRES}&signature=${await independentSignature('GET', PATH, EXPIRES)}`);
    expect(signed.other).toBe('/v1/providers/acme/thing/versions');
  });

  it('the signedUrlMinutes setting (SIGNED_URL_MINUTES) changes the lifetime', async () => {
    const signed = await signReleaseUrls(JSON.stringify({ u: PATH }), { ...SECRET, signedUrlMinutes: 60 }, (EXPIRES - 3600) * 1000);
    expect(JSON.parse(signed).u).toContain(`?expires=${EXPIRES}&`);
  });
});

describe('verifySignedUrl', () => {
  it('accepts a URL until the last millisecond before its expiry second, and refuses it from that second on', async () => {
    const url = `${PATH}?expires=${EXPIRES}&signature=${await independentSignature('GET', PATH, EXPIRES)}`;
    expect(await verifySignedUrl(request(url), SECRET, EXPIRES * 1000 - 1)).toEqual({ ok: true, expires: EXPIRES });
    const atExpiry = await verifySignedUrl(request(url), SECRET, EXPIRES * 1000);
    expect(atExpiry).toEqual({ ok: false, message: expect.stringContaining('expired') });
    expect(await verifySignedUrl(request(url), SECRET, EXPIRES * 1000 + 1000)).toMatchObject({ ok: false });
  });

  it('binds the method: a GET signature allows GET and HEAD only, and a signature for another method is refused', async () => {
    const now = (EXPIRES - 60) * 1000;
    const getUrl = `${PATH}?expires=${EXPIRES}&signature=${await independentSignature('GET', PATH, EXPIRES)}`;
    expect(await verifySignedUrl(request(getUrl, 'HEAD'), SECRET, now)).toEqual({ ok: true, expires: EXPIRES });
    for (const method of ['POST', 'PUT', 'DELETE']) {
      expect(await verifySignedUrl(request(getUrl, method), SECRET, now), method).toMatchObject({ ok: false });
    }
    const putUrl = `${PATH}?expires=${EXPIRES}&signature=${await independentSignature('PUT', PATH, EXPIRES)}`;
    expect(await verifySignedUrl(request(putUrl, 'GET'), SECRET, now)).toMatchObject({ ok: false });
  });

  it('binds the exact path and expiry', async () => {
    const now = (EXPIRES - 60) * 1000;
    const signature = await independentSignature('GET', PATH, EXPIRES);
    const other = PATH.replace('linux_amd64', 'darwin_arm64');
    for (const url of [
      `${other}?expires=${EXPIRES}&signature=${signature}`,
      `${PATH}/?expires=${EXPIRES}&signature=${signature}`,
      `${PATH.toUpperCase()}?expires=${EXPIRES}&signature=${signature}`,
      `${PATH}?expires=${EXPIRES + 1}&signature=${signature}`,
      `${PATH}?expires=${EXPIRES - 1}&signature=${signature}`,
      `${PATH}?expires=${EXPIRES}&signature=${await independentSignature('GET', PATH, EXPIRES, 'another secret')}`,
    ]) {
      expect(await verifySignedUrl(request(url), SECRET, now), url).toEqual({ ok: false, message: expect.stringContaining('does not match') });
    }
    expect(await verifySignedUrl(request(`${PATH}?expires=${EXPIRES}&signature=${signature}`), SECRET, now)).toEqual({ ok: true, expires: EXPIRES });
  });

  it('refuses a repeated expires or signature even when the first ones are valid (the contract: repeated → malformed)', async () => {
    const now = (EXPIRES - 60) * 1000;
    const signature = await independentSignature('GET', PATH, EXPIRES);
    for (const url of [
      `${PATH}?expires=${EXPIRES}&signature=${signature}&expires=${EXPIRES + 3600}`,
      `${PATH}?expires=${EXPIRES}&signature=${signature}&signature=${signature}`,
    ]) {
      expect(await verifySignedUrl(request(url), SECRET, now), url).toEqual({ ok: false, message: 'this download URL has a malformed signature' });
    }
  });
});
