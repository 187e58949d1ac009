import { beforeAll, describe, expect, it } from 'vitest';
import { signatureQuery } from '../../src/access/signed-urls';
import { address, bearer, env, errorsOf, fakeRelease, get, getWith, issueToken, resolve, seed, sha256HexOf } from './helpers';
import { settings } from '../../src/config';

// Private mode: every release-file URL in a metadata response is signed;
// release files need a valid signature and never a token.

const provider = address('signed', 'thing');
const upstream = address('hashicorp', 'signedup', 'registry.terraform.io');
const withPort = address('acme', 'ported', 'localhost:8443');
const release = fakeRelease(provider, '1.2.0', ['linux_amd64', 'darwin_arm64']);
const downloadPath = '/v1/providers/signed/thing/1.2.0/download/linux/amd64';
const mirrorPath = '/v1/mirror/registry.example.com/signed/thing/1.2.0.json';
const archivePath = (platform: string) => `/v1/archives/registry.example.com/signed/thing/1.2.0/terraform-provider-thing_1.2.0_${platform}.zip`;

let token: string;

interface DownloadDocument {
  download_url: string;
  shasums_url: string;
  shasums_signature_url: string;
  shasum: string;
}

beforeAll(async () => {
  await seed([release, fakeRelease(upstream, '1.0.0', ['linux_amd64']), fakeRelease(withPort, '1.0.0', ['linux_amd64'])]);
  ({ token } = await issueToken(['signed', 'registry.terraform.io/hashicorp', 'localhost:8443/acme']));
});

async function downloadDocument(): Promise<DownloadDocument> {
  const response = await get(downloadPath, bearer(token));
  expect(response.status).toBe(200);
  return response.json<DownloadDocument>();
}

function signedParts(url: string): { path: string; expires: number; signature: string } {
  const parsed = new URL(url, 'https://registry.example.com');
  return { path: parsed.pathname, expires: Number(parsed.searchParams.get('expires')), signature: parsed.searchParams.get('signature')! };
}

describe('signed URLs in private metadata', () => {
  it('find-a-package signs download, SHA256SUMS and signature URLs; each downloads without a token', async () => {
    const before = Math.floor(Date.now() / 1000);
    const doc = await downloadDocument();
    for (const url of [doc.download_url, doc.shasums_url, doc.shasums_signature_url]) {
      // Absolute on the origin asked (Renovate fetches them as given), signed.
      expect(url).toMatch(
        /^https:\/\/registry\.example\.com\/v1\/archives\/registry\.example\.com\/signed\/thing\/1\.2\.0\/[^?]+\?expires=\d+&signature=[A-Za-z0-9_-]{43}$/,
      );
      const { expires } = signedParts(url);
      // Signed at the start of the current 60 s signing window (signingWindow): never longer than the lifetime.
      expect(expires).toBeGreaterThanOrEqual(before + 15 * 60 - 60);
      expect(expires).toBeLessThanOrEqual(before + 15 * 60 + 5);
      const file = await get(resolve(url, downloadPath));
      expect(file.status, url).toBe(200);
      await file.arrayBuffer();
    }
    const archive = await get(resolve(doc.download_url, downloadPath));
    expect(await sha256HexOf(archive)).toBe(doc.shasum);
  });

  it('mirror VERSION.json signs every archive URL, for upstream hostnames and hostnames with a port too', async () => {
    for (const path of [mirrorPath, '/v1/mirror/registry.terraform.io/hashicorp/signedup/1.0.0.json', '/v1/mirror/localhost:8443/acme/ported/1.0.0.json']) {
      const response = await get(path, bearer(token));
      expect(response.status).toBe(200);
      const body = await response.json<{ archives: Record<string, { url: string }> }>();
      expect(Object.keys(body.archives).length).toBeGreaterThan(0);
      for (const { url } of Object.values(body.archives)) {
        expect(url).toContain('?expires=');
        const archive = await get(resolve(url, path));
        expect(archive.status).toBe(200);
        expect(archive.headers.get('cache-control')).toMatch(/^private, max-age=\d+$/);
        await archive.arrayBuffer();
      }
    }
  });

  it('archive responses are privately cacheable only until the URL expires', async () => {
    const doc = await downloadDocument();
    const response = await get(resolve(doc.download_url, downloadPath));
    const maxAge = Number(/^private, max-age=(\d+)$/.exec(response.headers.get('cache-control')!)![1]);
    expect(maxAge).toBeGreaterThan(13 * 60);
    expect(maxAge).toBeLessThanOrEqual(15 * 60);
    await response.arrayBuffer();
  });

  it('SIGNED_URL_MINUTES sets the lifetime', async () => {
    const before = Math.floor(Date.now() / 1000);
    const response = await getWith({ SIGNED_URL_MINUTES: '60' }, downloadPath, bearer(token));
    const { expires } = signedParts((await response.json<DownloadDocument>()).download_url);
    expect(expires).toBeGreaterThanOrEqual(before + 3600 - 60);
    expect(expires).toBeLessThanOrEqual(before + 3605);
  });

  it('with ARCHIVE_BASE_URL the URLs are absolute on it, signed, and valid on that host', async () => {
    const overrides = { ARCHIVE_BASE_URL: 'https://downloads.example.com' };
    const doc = await (await getWith(overrides, downloadPath, bearer(token))).json<DownloadDocument>();
    expect(doc.download_url).toMatch(/^https:\/\/downloads\.example\.com\/v1\/archives\/.+\?expires=\d+&signature=/);
    const file = await getWith(overrides, doc.download_url);
    expect(file.status).toBe(200);
    await file.arrayBuffer();
  });

  it('a missing URL_SIGNING_SECRET is a server misconfiguration (500), never an unsigned URL', async () => {
    const response = await getWith({ URL_SIGNING_SECRET: '' }, downloadPath, bearer(token));
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain('/v1/archives/');
  });
});

describe('release files in private mode', () => {
  it('unsigned → 403 with a JSON error', async () => {
    const response = await get(archivePath('linux_amd64'));
    expect(response.status).toBe(403);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect((await errorsOf(response))[0]).toContain('not signed');
  });

  it('a bearer token does not replace the signature', async () => {
    expect((await get(archivePath('linux_amd64'), bearer(token))).status).toBe(403);
  });

  it('a valid signature → 200 for GET and for HEAD (a URL signed for GET allows HEAD)', async () => {
    const url = (await downloadDocument()).download_url;
    const head = await get(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(release.bytes.get('terraform-provider-thing_1.2.0_linux_amd64.zip')!.byteLength));
    const ranged = await get(url, { headers: { range: 'bytes=0-9' } });
    expect(ranged.status).toBe(206);
    expect((await ranged.arrayBuffer()).byteLength).toBe(10);
  });

  it('a tampered signature → 403', async () => {
    const { path, expires, signature } = signedParts((await downloadDocument()).download_url);
    const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
    const response = await get(`${path}?expires=${expires}&signature=${flipped}`);
    expect(response.status).toBe(403);
    expect((await errorsOf(response))[0]).toContain('does not match');
  });

  it('a tampered expiry (extended) → 403', async () => {
    const { path, expires, signature } = signedParts((await downloadDocument()).download_url);
    expect((await get(`${path}?expires=${expires + 3600}&signature=${signature}`)).status).toBe(403);
  });

  it('a signature re-targeted to another archive of the same release → 403', async () => {
    const { expires, signature } = signedParts((await downloadDocument()).download_url);
    const response = await get(`${archivePath('darwin_arm64')}?expires=${expires}&signature=${signature}`);
    expect(response.status).toBe(403);
  });

  it('a signature re-targeted to another provider by a differently encoded path → 403', async () => {
    const { path, expires, signature } = signedParts((await downloadDocument()).download_url);
    const encoded = path.replace('/signed/', '/%73igned/');
    expect((await get(`${encoded}?expires=${expires}&signature=${signature}`)).status).toBe(403);
  });

  it('an expired URL (correctly signed) → 403 saying it expired', async () => {
    const path = archivePath('linux_amd64');
    const expires = Math.floor(Date.now() / 1000) - 1;
    const response = await get(`${path}?${await signatureQuery(settings(env), path, expires)}`);
    expect(response.status).toBe(403);
    expect((await errorsOf(response))[0]).toContain('expired');
  });

  it('a URL signed with another secret → 403', async () => {
    const path = archivePath('linux_amd64');
    const query = await signatureQuery({ signingSecret: 'another secret' }, path, Math.floor(Date.now() / 1000) + 600);
    expect((await get(`${path}?${query}`)).status).toBe(403);
  });

  const malformed = {
    'expires only': 'expires=99999999999',
    'signature only': `signature=${'A'.repeat(43)}`,
    'a non-numeric expiry': `expires=soon&signature=${'A'.repeat(43)}`,
    'a short signature': 'expires=99999999999&signature=AAAA',
    'a signature that is not base64url': `expires=99999999999&signature=${'*'.repeat(43)}`,
    'repeated parameters': `expires=1&expires=99999999999&signature=${'A'.repeat(43)}`,
  };
  for (const [name, query] of Object.entries(malformed)) {
    it(`malformed: ${name} → 403`, async () => {
      const response = await get(`${archivePath('linux_amd64')}?${query}`);
      expect(response.status).toBe(403);
      expect(response.headers.get('content-type')).toBe('application/json');
    });
  }
});
