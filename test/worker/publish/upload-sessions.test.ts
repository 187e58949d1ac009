import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { uploadFileKey, uploadPrefix } from '../../../src/store/layout';
import { MAX_OPEN_UPLOADS, newUploadId, writeUploadSession, type UploadSession } from '../../../src/store/uploads/session';
import type { BlobStore } from '../../../src/store/store';
import { get } from '../helpers';
import { zipStored } from '../../fixtures/archives';
import { bearer, hex, HOST, issue, put, type Session } from './api';

// Upload sessions of the publish API are bounded without any help from an operator: at most MAX_OPEN_UPLOADS
// open per credential (the next start is 429 naming the fix), and expired sessions — staged files and all —
// are removed by the Worker itself (refused on use, swept at upload starts), not by an R2 lifecycle rule.

const blobs = env.REGISTRY_R2 as unknown as BlobStore;
const keysUnder = async (prefix: string) => (await env.REGISTRY_R2.list({ prefix })).objects.map((o) => o.key);
const bytes = zipStored({ 'main.tf': 'variable "name" {}\n' });
const EMPTY_MODULE_DOCS = { inputs: [], outputs: [], providers: [], requiredVersion: null, submodules: [] };

function start(token: string, name: string, version = '1.0.0'): Promise<Response> {
  return (async () =>
    get(`/v1/publish/modules/sessions/${name}/aws/${version}`, {
      method: 'POST',
      headers: bearer(token, { 'content-type': 'application/json' }),
      body: JSON.stringify({ format: 'zip', size: bytes.byteLength, sha256: await hex(bytes), docs: EMPTY_MODULE_DOCS }),
    }))();
}

let hoarder: { token: string; id: string };
let other: { token: string; id: string };
beforeAll(async () => {
  hoarder = await issue('publish', ['sessions'], { name: 'hoarder' });
  other = await issue('publish', ['sessions'], { name: 'other' });
});

describe('upload sessions are bounded per credential and expire on their own', { timeout: 120_000 }, () => {
  it(`the ${MAX_OPEN_UPLOADS + 1}st open session of one token is refused with 429 naming the fix; other credentials are not affected; a commit frees a place`, async () => {
    const sessions: Session[] = [];
    for (let i = 0; i < MAX_OPEN_UPLOADS; i += 10) {
      const batch = await Promise.all(Array.from({ length: 10 }, (_, j) => start(hoarder.token, `m${i + j}`)));
      for (const response of batch) {
        expect(response.status, await response.clone().text()).toBe(201);
        sessions.push((await response.json()) as Session);
      }
    }
    const refused = await start(hoarder.token, 'one-more');
    expect(refused.status).toBe(429);
    const message = ((await refused.json()) as { errors: string[] }).errors[0]!;
    expect(message).toMatch(new RegExp(`${MAX_OPEN_UPLOADS} open upload sessions, the most at once \\(${MAX_OPEN_UPLOADS}\\): commit the ones you started`));
    expect(message).toMatch(/wait until the soonest expires at \d{4}-\d{2}-\d{2}T/);
    // Nothing was stored for the refused start.
    expect((await keysUnder('.uploads/')).filter((k) => k.endsWith('session.json')).length).toBeGreaterThanOrEqual(MAX_OPEN_UPLOADS);
    // Another credential of the same namespace still starts.
    expect((await start(other.token, 'theirs')).status).toBe(201);
    // Committing one frees a place.
    const first = sessions[0]!;
    expect((await put(hoarder.token, first.files[0]!.url, bytes)).status).toBe(200);
    const committed = await get(first.commit_url, { method: 'POST', headers: bearer(hoarder.token) });
    expect(committed.status, await committed.clone().text()).toBe(200);
    expect((await start(hoarder.token, 'after-commit')).status).toBe(201);
    expect((await start(hoarder.token, 'and-no-more')).status).toBe(429);
  });

  it('an expired session is refused (410) and removed on use; abandoned ones are swept by the next upload start, staged files included', async () => {
    const { token, id: tokenId } = await issue('publish', ['sessions'], { name: 'expiring' });
    const actor = { kind: 'token' as const, tokenId, name: 'expiring' };
    const sha256 = await hex(bytes);
    const expired = (id: string, minutesAgo: number): UploadSession => ({
      id,
      hostname: HOST,
      namespace: 'sessions',
      actor,
      created: new Date(Date.now() - 86_400_000).toISOString(),
      expires: new Date(Date.now() - minutesAgo * 60_000).toISOString(),
      partSize: 64 * 1024 * 1024,
      upload: {
        kind: 'module',
        name: 'old',
        system: 'aws',
        version: '1.0.0',
        format: 'zip',
        files: [{ filename: 'old-aws-1.0.0.zip', size: bytes.byteLength, sha256, contentType: 'application/zip' }],
        docs: { ...EMPTY_MODULE_DOCS, readmeHtml: null },
      },
    });
    // Two abandoned sessions with staged bytes (as a killed client leaves them), written as startSession does.
    const abandoned = [newUploadId(), newUploadId()];
    for (const [i, id] of abandoned.entries()) {
      await writeUploadSession(blobs, expired(id, 60 - i));
      await env.REGISTRY_R2.put(uploadFileKey(id, 'old-aws-1.0.0.zip'), bytes);
    }
    // On use: 410, and gone.
    const used = newUploadId();
    await writeUploadSession(blobs, expired(used, 1));
    const late = await put(token, `/v1/publish/uploads/${used}/old-aws-1.0.0.zip`, bytes);
    expect(late.status).toBe(410);
    expect(((await late.json()) as { errors: string[] }).errors[0]).toMatch(/expired at .*start the publish again/);
    // Swept: the next start of anyone removes expired sessions, oldest expiry first, with their files and markers
    // (the one refused on use is removed after its answer, or by this sweep at the latest).
    expect((await start(other.token, 'sweeper')).status).toBe(201);
    for (const id of [...abandoned, used]) expect(await keysUnder(uploadPrefix(id))).toEqual([]);
    const markers = await keysUnder('.uploads/.');
    for (const id of [...abandoned, used]) expect(markers.filter((k) => k.endsWith(id))).toEqual([]);
  });
});
