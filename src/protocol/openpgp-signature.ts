import type * as OpenPgp from 'openpgp';
import { InputError } from './errors';
import type { SigningKey } from './providers-v1';

/**
 * Verifying a detached OpenPGP signature over a release's SHA256SUMS against
 * a set of public keys, as Terraform checks it: used by the publish CLI (a
 * supplied SHA256SUMS.sig), the Worker's publish API, and the mirror (sync
 * and pull-through: a key of the upstream's `signing_keys`).
 * openpgp is loaded on first use, so the Worker's read routes never evaluate it.
 */

/** The outcome of findSigner: the key that made the signature, or why none did. */
export type SignerCheck =
  | { ok: true; key: SigningKey }
  /** The signature does not parse; `detail` is openpgp's reason (at most 120 characters). */
  | { ok: false; unreadable: true; detail: string }
  /** No key of the set verifies it; `signers` are the key ids the signature names (upper-case hex). */
  | { ok: false; unreadable: false; signers: string[] };

/**
 * Checks a detached signature (binary or armored) over `document` against
 * each of `keys` (a key that does not parse is skipped) and returns the first
 * that verifies it, or why none does. Never throws for bad input: each caller
 * words its own refusal.
 */
export async function findSigner(document: Uint8Array, signature: Uint8Array, keys: readonly SigningKey[]): Promise<SignerCheck> {
  const openpgp = await import('openpgp');
  let parsed: OpenPgp.Signature;
  try {
    const text = new TextDecoder().decode(signature.subarray(0, 64));
    parsed = text.includes('-----BEGIN PGP SIGNATURE-----')
      ? await openpgp.readSignature({ armoredSignature: new TextDecoder().decode(signature) })
      : await openpgp.readSignature({ binarySignature: signature });
  } catch (error) {
    return { ok: false, unreadable: true, detail: String((error as Error).message).slice(0, 120) };
  }
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
        return { ok: true, key };
      } catch {
        // Not this key, or a bad signature: try the next.
      }
    }
  }
  return { ok: false, unreadable: false, signers: parsed.getSigningKeyIDs().map((id) => id.toHex().toUpperCase()) };
}

/**
 * Verifies a detached signature (binary or armored) over `document` against
 * a namespace's `keys` and returns the key that made it. Throws InputError
 * naming `signatureName` when the signature is unreadable or none of the keys
 * verifies it (listing the signer's key id and the keys tried).
 */
export async function verifyDetached(document: Uint8Array, signature: Uint8Array, keys: readonly SigningKey[], signatureName: string): Promise<SigningKey> {
  const check = await findSigner(document, signature, keys);
  if (check.ok) return check.key;
  if (check.unreadable) {
    throw new InputError(`${signatureName}: not an OpenPGP signature (${check.detail}); re-create it with \`gpg --detach-sign\``);
  }
  const tried = keys.length === 0 ? 'the namespace has no signing keys' : `keys tried: ${keys.map((k) => k.key_id).join(', ')}`;
  throw new InputError(
    `${signatureName}: the signature (by key ${check.signers.join(', ') || 'unknown'}) does not verify against the namespace's public keys (${tried}); ` +
      "import the signer's public key with `npm run keys -- import`, or remove the .sig so the release is signed at publish",
  );
}
