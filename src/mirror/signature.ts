import type { SigningKey } from '../store/types';
import { UpstreamError } from './upstream-http';

/**
 * The check Terraform makes before trusting SHA256SUMS: its detached
 * OpenPGP signature (binary or armored) verifies with one of the keys in the
 * upstream's `signing_keys`. openpgp is loaded on first use, so requests that
 * never verify a signature do not pay for parsing it.
 */

/**
 * Returns the key of `keys` that made `signature` over `sums`. Throws
 * UpstreamError naming `where` when the signature does not parse or no key
 * verifies it (a bad signature and a signer not in signing_keys alike),
 * listing the signer's key id and the keys tried.
 */
export async function verifySumsSignature(
  sums: Uint8Array, signature: Uint8Array, keys: readonly SigningKey[], where: { signatureUrl: string; documentUrl: string },
): Promise<SigningKey> {
  const openpgp = await import('openpgp');
  let parsed: Awaited<ReturnType<typeof openpgp.readSignature>>;
  try {
    const head = new TextDecoder().decode(signature.subarray(0, 64));
    parsed = head.includes('-----BEGIN PGP SIGNATURE-----')
      ? await openpgp.readSignature({ armoredSignature: new TextDecoder().decode(signature) })
      : await openpgp.readSignature({ binarySignature: signature });
  } catch (error) {
    throw new UpstreamError(`signature check failed: ${where.signatureUrl} is not an OpenPGP signature (${String((error as Error).message).slice(0, 120)})`);
  }
  const signers = parsed.getSigningKeyIDs().map((id) => id.toHex().toUpperCase());
  const message = await openpgp.createMessage({ binary: sums });
  for (const key of keys) {
    let publicKey;
    try {
      publicKey = await openpgp.readKey({ armoredKey: key.ascii_armor });
    } catch {
      continue;
    }
    const result = await openpgp.verify({ message, signature: parsed, verificationKeys: publicKey, expectSigned: false });
    for (const sig of result.signatures) {
      try {
        await sig.verified;
        return key;
      } catch {
        // not this key, or a bad signature: try the next
      }
    }
  }
  throw new UpstreamError(
    `signature check failed: ${where.signatureUrl} (made by key ${signers.join(', ') || 'unknown'}) does not verify SHA256SUMS with any key in signing_keys of ${where.documentUrl} (${keys.map((k) => k.key_id || '?').join(', ')})`,
  );
}
