import type * as OpenPgp from 'openpgp';
import { InputError } from './errors';
import type { SigningKey } from '../store/types';

/**
 * Verifying a detached OpenPGP signature over a release's SHA256SUMS against
 * a namespace's public keys, as Terraform checks it: used by the publish
 * CLI (a supplied SHA256SUMS.sig) and by the Worker's publish API.
 * openpgp is loaded on first use, so the Worker's read routes never evaluate it.
 */

/**
 * Verifies a detached signature (binary or armored) over `document` against
 * `keys` and returns the key that made it. Throws InputError naming
 * `signatureName` when the signature is unreadable or none of the keys
 * verifies it (listing the signer's key id and the keys tried).
 */
export async function verifyDetached(
  document: Uint8Array,
  signature: Uint8Array,
  keys: readonly SigningKey[],
  signatureName: string,
): Promise<SigningKey> {
  const openpgp = await import('openpgp');
  let parsed: OpenPgp.Signature;
  try {
    const text = new TextDecoder().decode(signature.subarray(0, 64));
    parsed = text.includes('-----BEGIN PGP SIGNATURE-----')
      ? await openpgp.readSignature({ armoredSignature: new TextDecoder().decode(signature) })
      : await openpgp.readSignature({ binarySignature: signature });
  } catch (error) {
    throw new InputError(`${signatureName}: not an OpenPGP signature (${String((error as Error).message).slice(0, 120)}); re-create it with \`gpg --detach-sign\``);
  }
  const signers = parsed.getSigningKeyIDs().map((id) => id.toHex().toUpperCase());
  const message = await openpgp.createMessage({ binary: document });
  for (const key of keys) {
    let publicKey: OpenPgp.Key;
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
        // Not this key, or a bad signature: try the next.
      }
    }
  }
  const tried = keys.length === 0 ? 'the namespace has no signing keys' : `keys tried: ${keys.map((k) => k.key_id).join(', ')}`;
  throw new InputError(
    `${signatureName}: the signature (by key ${signers.join(', ') || 'unknown'}) does not verify against the namespace's public keys (${tried}); ` +
      'import the signer\'s public key with `npm run keys -- import`, or remove the .sig so the release is signed at publish',
  );
}
