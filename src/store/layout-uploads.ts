/** The publish API's staging names: part of the storage layout (layout.ts exports them with every other name). */

// ---- Publish API uploads (src/store/uploads/) ----
// R2 only: what a client uploads through /v1/publish/ is staged here until its commit copies it to the
// release file's (or module package's) own name under the lease. Nothing here is ever served or listed;
// an upload abandoned by a killed client expires (`expires` in the session): refused from then on and
// removed by the Worker's sweep (src/store/uploads/session.ts: up to 3 expired sessions at every upload
// start, oldest expiry first); the R2 lifecycle rule `npm run deploy` creates on `.uploads/` is a backstop.
//   .uploads/.open/CREDENTIAL/EXPIRES-ID   one empty marker per open session of a credential (the cap counts them)
//   .uploads/.expiry/EXPIRES-ID            one empty marker per session, names sorted by expiry (the sweep lists them)
//   .uploads/ID/session.json          the upload session: what is being published, declared files, actor, expiry
//   .uploads/ID/files/FILENAME        a staged file (its SHA-256 verified by R2 on put)
//   .uploads/ID/multipart/FILENAME    the R2 multipart upload id of a file sent in parts
//   .uploads/ID/parts/FILENAME/N      the etag of part N of that file
export const uploadPrefix = (id: string) => `.uploads/${id}/`;
/** EXPIRES: the expiry in ms since the epoch, 13 digits, so names sort by it. */
const expiryName = (expiresMs: number, id: string) => `${String(expiresMs).padStart(13, '0')}-${id}`;
export const uploadsOpenPrefix = (credential: string) => `.uploads/.open/${credential}/`;
export const uploadOpenKey = (credential: string, expiresMs: number, id: string) => `${uploadsOpenPrefix(credential)}${expiryName(expiresMs, id)}`;
export const uploadsExpiryPrefix = '.uploads/.expiry/';
export const uploadExpiryKey = (expiresMs: number, id: string) => `${uploadsExpiryPrefix}${expiryName(expiresMs, id)}`;
/** The expiry (ms) and session id an open or expiry marker names; null for a name of another form. */
export function parseUploadMarker(key: string): { expiresMs: number; id: string } | null {
  const match = /\/(\d{13})-([0-9a-f]{32})$/.exec(key);
  return match ? { expiresMs: Number(match[1]), id: match[2]! } : null;
}
export const uploadSessionKey = (id: string) => `${uploadPrefix(id)}session.json`;
export const uploadFileKey = (id: string, filename: string) => `${uploadPrefix(id)}files/${filename}`;
export const uploadMultipartKey = (id: string, filename: string) => `${uploadPrefix(id)}multipart/${filename}`;
export const uploadPartsPrefix = (id: string, filename: string) => `${uploadPrefix(id)}parts/${filename}/`;
export const uploadPartKey = (id: string, filename: string, part: number) => `${uploadPartsPrefix(id, filename)}${String(part).padStart(5, '0')}`;
