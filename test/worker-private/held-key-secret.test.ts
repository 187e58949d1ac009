import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { storeHeldKey } from '../../src/store/keys/held-keys';
import { writeSigningKeys } from '../../src/store/providers/signing-keys';
import { buildRelease, HOST, issue, publishRelease } from '../worker/publish/api';
import { get } from '../worker/helpers';

// A misconfigured registry says so (issue 36): this project's Worker runs without SIGNING_KEY_SECRET (vitest.config.ts
// gives it only to the public project), so a keyless publish into a namespace whose key the registry holds answers
// 503 naming the setting — not 500 "internal error" — and publishes nothing.

describe('SIGNING_KEY_SECRET not set, a registry-held key needed', () => {
  it('a keyless publish answers 503 naming SIGNING_KEY_SECRET and the fix; nothing is published', async () => {
    const key = inject('fixtureSigningKey');
    await writeSigningKeys(env.REGISTRY_KV, HOST, 'heldnosecret', [{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]);
    await storeHeldKey(env.REGISTRY_KV, 'a-secret-this-worker-was-never-given-0123456789', HOST, 'heldnosecret', key.keyId, key.armoredPrivateKey);
    const { token } = await issue('publish', ['heldnosecret/thing']);
    const release = await buildRelease('thing', '1.0.0', { unsigned: true });
    const result = await publishRelease(token, 'heldnosecret', release);
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(503);
    expect((result.body as { errors: string[] }).errors[0]).toMatch(
      /^the registry is misconfigured: SIGNING_KEY_SECRET is not set; generate one with `openssl rand -base64 32` \(wrangler secret put SIGNING_KEY_SECRET\)/,
    );
    expect((await get('/v1/providers/heldnosecret/thing/versions', { headers: { authorization: `Bearer ${token}` } })).status).not.toBe(200);
  });
});
