import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { parsePublisherInput } from '../../../src/access/publishers';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import { readPublishers } from '../../../src/store/publishers/read';
import { updatePublishers, writePublishers } from '../../../src/store/publishers/write';
import type { Store } from '../../../src/store/store';
import { buildRelease, HOST, manifestOf, type Session } from '../publish/api';
import { githubJob, mint } from '../publish/ci-jobs';
import { expectNoFailures, ORIGIN, production } from './scenario';

// Rule: KV is cached per location; R2 is strongly consistent. Trusted publishers live in R2 and change only by
// conditional writes (src/store/publishers/), and the Worker never writes them back (nothing is pinned from a
// token). Scenario: a CI publish racing `npm run publisher -- remove` — once removed, the publisher is refused at
// every location from the next request on, including the upload its job had already started, and never returns.

const { github } = inject('ciIssuers');
const REPO = 'acme/terraform-provider-thing';
const NS = 'rmrace';
const store: Store = { kv: env.REGISTRY_KV as never, blobs: env.REGISTRY_R2 as never };
const token = () => mint(github, githubJob(REPO));

const start = async (p: ReturnType<typeof production>, location: string, version: string) => {
  const release = await buildRelease('thing', version, { unsigned: true });
  const response = await p.fetch(
    location,
    new Request(`${ORIGIN}/v1/publish/providers/${NS}/thing/${version}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await token()}`, 'content-type': 'application/json' },
      body: JSON.stringify(await manifestOf(release)),
    }),
  );
  return { response, release };
};

describe('a CI publish racing publisher remove', () => {
  it('once removed, the publisher is refused at every location, its started upload too, and it never returns', async () => {
    const key = inject('fixtureSigningKey');
    await writeSigningKeys(env.REGISTRY_KV, HOST, NS, [{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]);
    await storeHeldKey(env.REGISTRY_KV, env.SIGNING_KEY_SECRET!, HOST, NS, key.keyId, key.armoredPrivateKey);
    const publisher = await parsePublisherInput({
      issuer: github.url,
      repository: REPO,
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
      repositoryId: '123456',
      ownerId: '654321',
      packages: [`${NS}/thing`],
    });
    await writePublishers(store, HOST, NS, [publisher]);
    const p = production();

    // Location A's job starts a publish (its token is trusted): an upload session.
    const a = await start(p, 'A', '1.0.0');
    expect(a.response.status).toBe(201);
    const session = (await a.response.json()) as Session;

    // The operator removes the publisher (npm run publisher -- remove: one conditional R2 write), racing a change of
    // another operator that read the list before the removal: the removal is kept.
    const stale = await readPublishers(store, HOST, NS);
    await updatePublishers(store, HOST, NS, (current) => ({ publishers: current.filter((x) => x.id !== publisher.id), result: undefined }));
    await updatePublishers(store, HOST, NS, (current) => ({ publishers: [...current], result: stale.length }));
    expect(await readPublishers(store, HOST, NS)).toEqual([]);

    // A's job continues its upload: refused (no trusted publisher), nothing staged.
    const file = session.files[0]!;
    const uploaded = await p.fetch(
      'A',
      new Request(new URL(file.url, ORIGIN), {
        method: 'PUT',
        headers: { authorization: `Bearer ${await token()}`, 'content-length': String(a.release.files.get(file.filename)!.byteLength) },
        body: a.release.files.get(file.filename)!,
      }),
    );
    expect(uploaded.status).toBeGreaterThanOrEqual(401);
    expect(uploaded.status).toBeLessThanOrEqual(403);
    // Jobs at other locations, now and after KV's cache time: refused, nothing listed.
    for (const [location, advance] of [
      ['B', 0],
      ['C', 0],
      ['A', 61_000],
      ['B', 0],
    ] as const) {
      p.clock.advance(advance);
      const attempt = await start(p, location, '1.0.1');
      expect(attempt.response.status, `${location}: ${await attempt.response.clone().text()}`).toBe(401);
      expect(((await attempt.response.json()) as { errors: string[] }).errors[0]).toMatch(/is not trusted for namespace rmrace \(it has no trusted publishers/);
    }
    expect((await p.fetch('B', `${ORIGIN}/v1/providers/${NS}/thing/versions`)).status).toBe(404);
    expect(await readPublishers(store, HOST, NS)).toEqual([]);
    expectNoFailures(p);
  }, 60_000);
});
