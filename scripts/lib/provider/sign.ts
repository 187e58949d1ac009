import * as openpgp from 'openpgp';

/**
 * Detached OpenPGP signatures over SHA256SUMS, as Terraform checks them:
 * binary (not armored), signature type "binary document", made by the key
 * whose public part is served in signing_keys.
 */

/** A binary detached signature of `document` made with `privateKey`. */
export async function signDetached(document: Uint8Array, privateKey: openpgp.PrivateKey): Promise<Uint8Array> {
  const message = await openpgp.createMessage({ binary: document });
  return openpgp.sign({ message, signingKeys: privateKey, detached: true, format: 'binary' });
}

// Verification runs in the Worker too (the publish API): it lives in src/protocol/openpgp-signature.ts.
export { verifyDetached } from '../../../src/protocol/openpgp-signature';
