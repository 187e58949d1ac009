/**
 * DSSE v1 envelopes (github.com/secure-systems-lab/dsse) signed and checked
 * with WebCrypto's Ed25519 (crypto.subtle in workerd and in Node): the
 * signature is over the pre-authentication encoding
 *   PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
 * never over the bare payload, so a signature cannot be replayed as another
 * payload type. Keys travel as JWKs (OKP, crv Ed25519); `keyid` is the JWK's
 * `kid`.
 */
import { fromBase64, toBase64 } from '../bytes';

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

export interface DsseEnvelope {
  payloadType: string;
  /** Standard base64 of the statement bytes. */
  payload: string;
  signatures: { keyid: string; sig: string }[];
}

/** A public attestation key as served at /v1/provenance/keys. */
export interface AttestationPublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
  /** ISO time the key was created (informative). */
  created?: string;
}

/** Raised for an envelope that does not verify; `message` says what did not match. */
export class DsseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DsseError';
  }
}

const encoder = new TextEncoder();

/** The pre-authentication encoding of DSSE v1 (lengths are byte lengths, in ASCII decimal). */
export function pae(payloadType: string, body: Uint8Array): Uint8Array {
  const type = encoder.encode(payloadType);
  const head = encoder.encode(`DSSEv1 ${type.byteLength} ${payloadType} ${body.byteLength} `);
  const out = new Uint8Array(head.byteLength + body.byteLength);
  out.set(head);
  out.set(body, head.byteLength);
  return out;
}

/** Signs `body` as a DSSE envelope of `payloadType` with the Ed25519 `privateKey` named `keyid`. */
export async function signEnvelope(body: Uint8Array, privateKey: CryptoKey, keyid: string, payloadType = IN_TOTO_PAYLOAD_TYPE): Promise<DsseEnvelope> {
  const sig = new Uint8Array(await crypto.subtle.sign('Ed25519', privateKey, pae(payloadType, body)));
  return { payloadType, payload: toBase64(body), signatures: [{ keyid, sig: toBase64(sig) }] };
}

/**
 * Verifies `envelope` against `keys` (the registry's JWK set): it must be an
 * in-toto envelope with at least one signature whose `keyid` names a key of
 * the set and that verifies over PAE(payloadType, payload). Resolves with
 * the payload bytes and the key that verified; throws DsseError otherwise.
 */
export async function verifyEnvelope(envelope: unknown, keys: readonly AttestationPublicJwk[]): Promise<{ body: Uint8Array; kid: string }> {
  const e = envelope as Partial<DsseEnvelope> | null;
  if (typeof e !== 'object' || e === null || typeof e.payload !== 'string' || typeof e.payloadType !== 'string' || !Array.isArray(e.signatures)) {
    throw new DsseError('not a DSSE envelope (payloadType, payload, signatures)');
  }
  if (e.payloadType !== IN_TOTO_PAYLOAD_TYPE) throw new DsseError(`payloadType is ${JSON.stringify(e.payloadType)}, not ${IN_TOTO_PAYLOAD_TYPE}`);
  const body = decoded(e.payload, 'payload');
  const message = pae(e.payloadType, body);
  for (const signature of e.signatures) {
    const jwk = keys.find((k) => k.kid === signature?.keyid);
    if (!jwk || typeof signature.sig !== 'string') continue;
    const key = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, { name: 'Ed25519' }, false, ['verify']);
    if (await crypto.subtle.verify('Ed25519', key, decoded(signature.sig, 'signature'), message)) return { body, kid: jwk.kid };
  }
  const ids = e.signatures.map((s) => s?.keyid).join(', ');
  throw new DsseError(
    `the envelope's signature (key ${ids || 'unnamed'}) does not verify with any of the registry's attestation keys (${keys.map((k) => k.kid).join(', ') || 'none'})`,
  );
}

function decoded(text: string, what: string): Uint8Array {
  const bytes = fromBase64(text);
  if (bytes === null) throw new DsseError(`the envelope's ${what} is not base64`);
  return bytes;
}
