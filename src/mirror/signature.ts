import type { SigningKey } from '../store/types';
import { findSigner } from '../protocol/openpgp-signature';
import { UpstreamError } from './upstream-http';

/**
 * The check Terraform makes before trusting an upstream's SHA256SUMS: its
 * detached OpenPGP signature (binary or armored) verifies with one of the
 * keys in the upstream's `signing_keys` (src/protocol/openpgp-signature.ts
 * does the verifying; this words the mirror's refusal).
 */

/**
 * Returns the key of `keys` that made `signature` over `sums`. Throws
 * UpstreamError naming `where` when the signature does not parse or no key
 * verifies it (a bad signature and a signer not in signing_keys alike),
 * listing the signer's key id and the keys tried.
 */
export async function verifySumsSignature(
  sums: Uint8Array,
  signature: Uint8Array,
  keys: readonly SigningKey[],
  where: { signatureUrl: string; documentUrl: string },
): Promise<SigningKey> {
  const check = await findSigner(sums, signature, keys);
  if (check.ok) return check.key;
  if (check.unreadable) throw new UpstreamError(`signature check failed: ${where.signatureUrl} is not an OpenPGP signature (${check.detail})`);
  throw new UpstreamError(
    `signature check failed: ${where.signatureUrl} (made by key ${check.signers.join(', ') || 'unknown'}) does not verify SHA256SUMS with any key in signing_keys of ${where.documentUrl} (${keys.map((k) => k.key_id || '?').join(', ')})`,
  );
}
