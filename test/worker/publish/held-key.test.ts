import { env } from 'cloudflare:workers';
import * as openpgp from 'openpgp';
import { describe, expect, it } from 'vitest';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import { getWith } from '../helpers';
import { bearer, buildRelease, HOST, issue, manifestOf, type Session } from './api';

// A release published through the API without a signature is signed by the namespace's registry-held key
// (the trusted-publishers work, src/store/keys/held-keys.ts); the served signature verifies with the served key.

const SECRET = 'publish-api-test-secret-0123456789abcdef';
const fetchWith = (path: string, init?: RequestInit) => getWith({ SIGNING_KEY_SECRET: SECRET }, path, init);

describe('signing with the registry-held key', { timeout: 60_000 }, () => {
  it('signs SHA256SUMS of an unsigned upload; the download document serves the key that verifies it', async () => {
    const { privateKey, publicKey } = await openpgp.generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name: 'held' }], format: 'armored' });
    const key = await openpgp.readKey({ armoredKey: publicKey });
    const keyId = key.getKeyID().toHex().toUpperCase();
    await writeSigningKeys(env.REGISTRY_KV, HOST, 'held', [{ key_id: keyId, ascii_armor: publicKey }]);
    await storeHeldKey(env.REGISTRY_KV, SECRET, HOST, 'held', keyId, privateKey);
    const { token } = await issue('publish', ['held']);

    const release = await buildRelease('signed', '1.0.0', { unsigned: true });
    const started = await fetchWith('/v1/publish/providers/held/signed/1.0.0', {
      method: 'POST',
      headers: bearer(token),
      body: JSON.stringify(await manifestOf(release)),
    });
    expect(started.status).toBe(201);
    const session = (await started.json()) as Session;
    for (const file of session.files) {
      const bytes = release.files.get(file.filename)!;
      expect((await fetchWith(file.url, { method: 'PUT', headers: bearer(token, { 'content-length': String(bytes.byteLength) }), body: bytes })).status).toBe(
        200,
      );
    }
    const committed = await fetchWith(session.commit_url, { method: 'POST', headers: bearer(token) });
    expect(committed.status, await committed.clone().text()).toBe(200);
    expect(await committed.json()).toMatchObject({ status: 'published', key_id: keyId });

    const doc = (await (await fetchWith('/v1/providers/held/signed/1.0.0/download/linux/amd64')).json()) as {
      shasums_url: string;
      shasums_signature_url: string;
      signing_keys: { gpg_public_keys: { key_id: string; ascii_armor: string }[] };
    };
    expect(doc.signing_keys.gpg_public_keys.map((k) => k.key_id)).toEqual([keyId]);
    const sums = new Uint8Array(await (await fetchWith(doc.shasums_url)).arrayBuffer());
    const signature = new Uint8Array(await (await fetchWith(doc.shasums_signature_url)).arrayBuffer());
    const verified = await openpgp.verify({
      message: await openpgp.createMessage({ binary: sums }),
      signature: await openpgp.readSignature({ binarySignature: signature }),
      verificationKeys: await openpgp.readKey({ armoredKey: doc.signing_keys.gpg_public_keys[0]!.ascii_armor }),
      expectSigned: true,
    });
    expect(verified.signatures[0]!.keyID.toHex().toUpperCase()).toBe(keyId);
  });
});
