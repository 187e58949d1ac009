import { sha256Hex } from '../../protocol/hashes';
import { endedSessionKey } from '../layout';

/**
 * Page sessions ended by signing out (POST /logout). A session cookie is
 * self-contained (an HMAC-signed token hash, or a sealed person session), so
 * clearing it in the browser leaves every copy of it working until it
 * expires; signing out therefore also records the session as ended in R2
 * (strongly consistent: refused from the next request on, in every
 * location), named by the SHA-256 of the cookie value (never the value),
 * and every page request checks it (one R2 head). The marker is only needed
 * until the session would have expired anyway (`expires`, custom metadata);
 * an R2 lifecycle rule on `.ended-sessions/` (a day or more) deletes it later.
 */

/** Records the session with this cookie value as ended (one R2 write). `expires`: epoch seconds the session would end anyway. */
export async function endSession(blobs: R2Bucket, cookieValue: string, expires: number): Promise<void> {
  await blobs.put(endedSessionKey(sha256Hex(cookieValue)), '', { customMetadata: { expires: String(expires) } });
}

/** True when the session with this cookie value was ended by signing out (one R2 head). */
export async function sessionEnded(blobs: R2Bucket, cookieValue: string): Promise<boolean> {
  return (await blobs.head(endedSessionKey(sha256Hex(cookieValue)))) !== null;
}
