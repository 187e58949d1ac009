import { InputError } from '../../protocol/errors';
import { shasumsSignatureFilename } from '../../protocol/release-files';
import type { SigningKey } from '../../store/types';

/**
 * Who signs a release published through the API when the client sent no
 * SHA256SUMS.sig: the namespace's registry-held key (the trusted-publishers
 * work, src/store/keys/held-keys.ts) once it exists. Until then a publish
 * without a signature is refused with what to do instead.
 */
export interface ApiSigner {
  sign(sums: Uint8Array): Promise<{ signature: Uint8Array; key: SigningKey }>;
}

/**
 * The signer for a publish without a supplied signature, or throws
 * InputError (400) saying how to sign when the namespace cannot be signed for.
 */
export async function signerFor(namespace: string, type: string, version: string): Promise<ApiSigner> {
  throw new InputError(
    `no ${shasumsSignatureFilename(type, version)} was sent and this registry holds no signing key for namespace ${namespace}: ` +
      `sign SHA256SUMS with a key registered for the namespace (publish-provider --key-file PATH, or goreleaser's signing step) and send the .sig`,
  );
}
