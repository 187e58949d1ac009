import { env } from 'cloudflare:workers';
import * as openpgp from 'openpgp';
import { describe, expect, inject, it } from 'vitest';
import { heldSigningKeyKey, signingKeysKey } from '../../../src/store/layout';
import { deleteHeldKey, heldKeyInfo, signShasumsWithHeldKey, storeHeldKey } from '../../../src/store/keys/held-keys';
import { SealError, SecretMismatchError } from '../../../src/store/errors';
import { errorToResponse } from '../../../src/http/errors';
import { open, seal } from '../../../src/store/keys/seal';

/**
 * Registry-held signing keys inside workerd (the runtime that signs): sealed
 * at rest, opened only with the right secret for the right namespace, and
 * signatures that verify against the registered public key.
 */
const SECRET = 'held-key-test-secret-0123456789abcdefghij';
const HOST = 'registry.example.com';
const store = { kv: env.REGISTRY_KV };
const sums = new TextEncoder().encode(`${'a'.repeat(64)}  terraform-provider-held_1.0.0_linux_amd64.zip\n`);

async function holdFixtureKey(namespace: string): Promise<string> {
  const key = inject('fixtureSigningKey');
  await env.REGISTRY_KV.put(signingKeysKey(HOST, namespace), JSON.stringify([{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]));
  await storeHeldKey(env.REGISTRY_KV, SECRET, HOST, namespace, key.keyId, key.armoredPrivateKey);
  return key.keyId;
}

describe('seal', () => {
  it('opens with the same secret and data; any other secret, data or byte fails with SealError', async () => {
    const plaintext = new TextEncoder().encode('private');
    const sealed = await seal(SECRET, plaintext, 'acme');
    expect(new TextDecoder().decode(await open(SECRET, sealed, 'acme'))).toBe('private');
    expect(sealed.ciphertext).not.toContain(btoa('private'));
    await expect(open(`${SECRET}x`, sealed, 'acme')).rejects.toBeInstanceOf(SealError);
    await expect(open(SECRET, sealed, 'other')).rejects.toBeInstanceOf(SealError);
    const bytes = Uint8Array.from(atob(sealed.ciphertext), (c) => c.charCodeAt(0));
    bytes[bytes.length - 1]! ^= 1;
    await expect(open(SECRET, { ...sealed, ciphertext: btoa(String.fromCharCode(...bytes)) }, 'acme')).rejects.toBeInstanceOf(SealError);
    await expect(seal('short', plaintext, 'acme')).rejects.toThrow(/SIGNING_KEY_SECRET is shorter than 32/);
    await expect(seal('', plaintext, 'acme')).rejects.toThrow(/SIGNING_KEY_SECRET is not set/);
  });
});

describe('signShasumsWithHeldKey', () => {
  it('signs SHA256SUMS with the namespace key (a binary detached signature that verifies with the registered public key); the stored record holds no key in clear', async () => {
    const keyId = await holdFixtureKey('held');
    const stored = (await env.REGISTRY_KV.get(heldSigningKeyKey(HOST, 'held'), 'text'))!;
    expect(stored).not.toContain('PRIVATE KEY');
    // The armour's header, not the bare letters: the sealed ciphertext is base64, which holds "PGP" now and then.
    expect(stored).not.toContain('-----BEGIN PGP');
    expect(Object.keys(JSON.parse(stored)).sort()).toEqual(['created', 'keyId', 'sealed']);
    expect(await heldKeyInfo(env.REGISTRY_KV, HOST, 'held')).toMatchObject({ keyId });

    const started = performance.now();
    const result = await signShasumsWithHeldKey(store, { signingKeySecret: SECRET }, HOST, 'held', sums);
    console.log(`held-key signature (ed25519, in workerd): ${(performance.now() - started).toFixed(1)} ms wall`);
    expect(result?.keyId).toBe(keyId);
    const signature = await openpgp.readSignature({ binarySignature: result!.signature });
    const verification = await openpgp.verify({
      message: await openpgp.createMessage({ binary: sums }),
      signature,
      verificationKeys: await openpgp.readKey({ armoredKey: inject('fixtureSigningKey').armoredPublicKey }),
    });
    await expect(verification.signatures[0]!.verified).resolves.toBe(true);
    // Another document does not verify with that signature.
    const other = await openpgp.verify({
      message: await openpgp.createMessage({ binary: new TextEncoder().encode('other') }),
      signature,
      verificationKeys: await openpgp.readKey({ armoredKey: inject('fixtureSigningKey').armoredPublicKey }),
    });
    await expect(other.signatures[0]!.verified).rejects.toThrow();
  });

  it("an RSA key (keys generate's default) signs through WebCrypto: a v4 binary signature over SHA-256 naming the key, which openpgp verifies; the key opens once per isolate", async () => {
    const { privateKey, publicKey } = await openpgp.generateKey({
      userIDs: [{ name: 'held', email: 'held@example.com' }],
      type: 'rsa',
      rsaBits: 2048,
      format: 'armored',
    });
    const parsed = await openpgp.readPrivateKey({ armoredKey: privateKey });
    const keyId = parsed.getKeyID().toHex().toUpperCase();
    await env.REGISTRY_KV.put(signingKeysKey(HOST, 'rsa'), JSON.stringify([{ key_id: keyId, ascii_armor: publicKey }]));
    await storeHeldKey(env.REGISTRY_KV, SECRET, HOST, 'rsa', keyId, privateKey);

    const first = await signShasumsWithHeldKey(store, { signingKeySecret: SECRET }, HOST, 'rsa', sums);
    const again = await signShasumsWithHeldKey(store, { signingKeySecret: SECRET }, HOST, 'rsa', sums);
    for (const result of [first, again]) {
      expect(result?.keyId).toBe(keyId);
      const signature = await openpgp.readSignature({ binarySignature: result!.signature });
      const packet = signature.packets[0]!;
      expect(packet.version).toBe(4);
      expect(packet.signatureType).toBe(openpgp.enums.signature.binary);
      expect(packet.publicKeyAlgorithm).toBe(openpgp.enums.publicKey.rsaEncryptSign);
      expect(packet.hashAlgorithm).toBe(openpgp.enums.hash.sha256);
      expect(packet.issuerKeyID.toHex().toUpperCase()).toBe(keyId);
      expect(packet.issuerFingerprint && [...packet.issuerFingerprint].map((b) => b.toString(16).padStart(2, '0')).join('')).toBe(parsed.getFingerprint());
      expect(Math.abs(packet.created!.getTime() - Date.now())).toBeLessThan(60_000);
      const verification = await openpgp.verify({
        message: await openpgp.createMessage({ binary: sums }),
        signature,
        verificationKeys: await openpgp.readKey({ armoredKey: publicKey }),
      });
      await expect(verification.signatures[0]!.verified).resolves.toBe(true);
      const other = await openpgp.verify({
        message: await openpgp.createMessage({ binary: new TextEncoder().encode('other') }),
        signature,
        verificationKeys: await openpgp.readKey({ armoredKey: publicKey }),
      });
      await expect(other.signatures[0]!.verified).rejects.toThrow();
    }
    // A rotated secret does not reuse the key opened under the old one.
    await expect(signShasumsWithHeldKey(store, { signingKeySecret: `${SECRET}-rotated` }, HOST, 'rsa', sums)).rejects.toBeInstanceOf(SealError);
  });

  it('null for a namespace without a held key, and once the key was removed from the namespace', async () => {
    expect(await signShasumsWithHeldKey(store, { signingKeySecret: SECRET }, HOST, 'nokey', sums)).toBeNull();
    await holdFixtureKey('removed');
    await env.REGISTRY_KV.put(signingKeysKey(HOST, 'removed'), '[]');
    expect(await signShasumsWithHeldKey(store, { signingKeySecret: SECRET }, HOST, 'removed', sums)).toBeNull();
    expect(await deleteHeldKey(env.REGISTRY_KV, HOST, 'removed', '0000000000000000')).toBe(false);
    expect(await deleteHeldKey(env.REGISTRY_KV, HOST, 'removed')).toBe(true);
    expect(await heldKeyInfo(env.REGISTRY_KV, HOST, 'removed')).toBeNull();
  });

  it('a wrong or missing secret, a sealed key copied to another namespace, or a record sealing another key than it names: SealError, no signature', async () => {
    await holdFixtureKey('secret');
    await expect(signShasumsWithHeldKey(store, { signingKeySecret: `${SECRET}-rotated` }, HOST, 'secret', sums)).rejects.toBeInstanceOf(SealError);
    // A changed secret is a setting to fix: the Worker answers 503 naming it, not a bare 500.
    const wrong = await signShasumsWithHeldKey(store, { signingKeySecret: `${SECRET}-rotated` }, HOST, 'secret', sums).catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(SecretMismatchError);
    const answer = errorToResponse(wrong);
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { errors: string[] }).errors[0]).toMatch(/^the registry is misconfigured: SIGNING_KEY_SECRET does not open/);
    await expect(signShasumsWithHeldKey(store, { signingKeySecret: '' }, HOST, 'secret', sums)).rejects.toThrow(/SIGNING_KEY_SECRET is not set/);
    // An operator (or attacker with KV write) copies acme's sealed key to "evil" and registers the public key there.
    const key = inject('fixtureSigningKey');
    await env.REGISTRY_KV.put(heldSigningKeyKey(HOST, 'evil'), (await env.REGISTRY_KV.get(heldSigningKeyKey(HOST, 'secret'), 'text'))!);
    await env.REGISTRY_KV.put(signingKeysKey(HOST, 'evil'), JSON.stringify([{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]));
    await expect(signShasumsWithHeldKey(store, { signingKeySecret: SECRET }, HOST, 'evil', sums)).rejects.toBeInstanceOf(SealError);
    // A record naming one key that holds another (stored under the wrong id): refused, not signed with the other key.
    const { privateKey: otherKey } = await openpgp.generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name: 'other' }], format: 'armored' });
    await storeHeldKey(env.REGISTRY_KV, SECRET, HOST, 'mismatch', key.keyId, otherKey);
    await env.REGISTRY_KV.put(signingKeysKey(HOST, 'mismatch'), JSON.stringify([{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]));
    await expect(signShasumsWithHeldKey(store, { signingKeySecret: SECRET }, HOST, 'mismatch', sums)).rejects.toThrow(
      /the registry-held key of mismatch is not key/,
    );
  });
});
