import { InputError } from '../../protocol/errors';
import { shasumsSignatureFilename } from '../../protocol/release-files';
import { heldKeyForPublish, heldKeyInfo } from '../../store/keys/held-keys';
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
 * its public half is no longer registered). Cost: 2 KV reads; signing itself
 * one OpenPGP signature (the held key is opened and parsed once per isolate).
 */
export async function signerFor(context: SignerContext, type: string, version: string): Promise<ApiSigner> {
  const { kv, hostname, namespace } = context;
  const refuse = refusal(type, version, namespace);
  // The held key and the namespace's registered keys, read once (2 KV reads) and used for the signature.
  const held = await heldKeyForPublish({ kv }, { signingKeySecret: context.signingKeySecret }, hostname, namespace);
  if (held === null) throw refuse(`this registry holds no signing key for namespace ${namespace}`);
  return {
    async sign(sums) {
      const key = held.registered.find((k) => k.key_id === held.keyId);
      if (!key) throw refuse(`the registry-held key ${held.keyId} is no longer one of the namespace's signing keys`);
      return { signature: await held.sign(sums), key };
    },
  };
}

/** The refusal of an unsigned publish the registry cannot sign, saying `why`. */
function refusal(type: string, version: string, namespace: string): (why: string) => InputError {
  return (why) =>
    new InputError(
      `no ${shasumsSignatureFilename(type, version)} was sent and ${why}: sign SHA256SUMS with a key registered for the namespace ` +
        "(publish-provider --key-file PATH, or goreleaser's signing step) and send the .sig, or have the operator give the namespace a key held by the registry " +
        `(npm run keys -- generate --namespace ${namespace} --held-by-registry)`,
    );
}

/** Refuses (InputError, 400) an unsigned publish when the namespace has no registry-held key, before any upload. Cost: 1 KV read. */
export async function refuseUnlessHeldKey(context: Omit<SignerContext, 'signingKeySecret'>, type: string, version: string): Promise<void> {
  if ((await heldKeyInfo(context.kv, context.hostname, context.namespace)) === null)
    throw refusal(type, version, context.namespace)(`this registry holds no signing key for namespace ${context.namespace}`);
}
