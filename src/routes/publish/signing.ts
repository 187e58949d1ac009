import { InputError } from '../../protocol/errors';
import { shasumsSignatureFilename } from '../../protocol/release-files';
import { heldKeyInfo, signShasumsWithHeldKey } from '../../store/keys/held-keys';
import { readSigningKeys } from '../../store/providers/signing-keys';
import type { KvStore } from '../../store/store';
import type { SigningKey } from '../../store/types';

/**
 * Who signs a release published through the API when the client sent no
 * SHA256SUMS.sig: the namespace's registry-held key (src/store/keys/held-keys.ts,
 * sealed under SIGNING_KEY_SECRET; `npm run keys -- generate --held-by-registry`).
 * A namespace without one gets a 400 saying how to sign instead.
 */
export interface ApiSigner {
  sign(sums: Uint8Array): Promise<{ signature: Uint8Array; key: SigningKey }>;
}

export interface SignerContext {
  kv: KvStore;
  signingKeySecret: string;
  hostname: string;
  namespace: string;
}

/**
 * The signer for a publish of TYPE VERSION without a supplied signature.
 * Throws InputError (400) when the namespace has no registry-held key (or
 * its public half is no longer registered). Cost: 1 KV read; signing itself
 * 2 KV reads and one OpenPGP signature.
 */
export async function signerFor(context: SignerContext, type: string, version: string): Promise<ApiSigner> {
  const { kv, hostname, namespace } = context;
  const refuse = (why: string) =>
    new InputError(
      `no ${shasumsSignatureFilename(type, version)} was sent and ${why}: sign SHA256SUMS with a key registered for the namespace ` +
        "(publish-provider --key-file PATH, or goreleaser's signing step) and send the .sig, or have the operator give the namespace a key held by the registry " +
        `(npm run keys -- generate --namespace ${namespace} --held-by-registry)`,
    );
  const held = await heldKeyInfo(kv, hostname, namespace);
  if (held === null) throw refuse(`this registry holds no signing key for namespace ${namespace}`);
  return {
    async sign(sums) {
      const signed = await signShasumsWithHeldKey({ kv }, { signingKeySecret: context.signingKeySecret }, hostname, namespace, sums);
      if (signed === null) throw refuse(`the registry-held key of namespace ${namespace} is no longer one of its signing keys`);
      const key = (await readSigningKeys(kv, hostname, namespace)).find((k) => k.key_id === signed.keyId);
      if (!key) throw refuse(`the registry-held key ${signed.keyId} is no longer one of the namespace's signing keys`);
      return { signature: signed.signature, key };
    },
  };
}
