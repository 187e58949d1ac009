import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { docsKey } from '../../../src/store/layout';
import { get } from '../helpers';
import { buildRelease, commit, HOST, issue, manifestOf, publishRelease, put, registerFixtureKey, startPublish, type Session } from './api';

// Provider docs through the publish API (publish-provider --registry --docs): checked field by field (the sender
// is a publisher), stored with the version like a local --docs publish, immutable, and served on the docs pages.

const docs = (type: string, description = 'Things, managed.', extra: object = {}) => ({
  source: 'provider-code-spec',
  provider: type,
  providerSchema: { description, attributes: [{ name: 'endpoint', type: 'string', mode: 'optional', description: 'Where <b>things</b> live' }], blocks: [] },
  resources: [
    {
      name: `${type}_server`,
      schema: {
        attributes: [{ name: 'id', type: 'string', mode: 'computed' }],
        blocks: [{ name: 'disk', nesting: 'list', maxItems: 4, attributes: [{ name: 'size', type: 'number', mode: 'required' }], blocks: [] }],
      },
    },
  ],
  dataSources: [],
  ...extra,
});

let publisher: string;
beforeAll(async () => {
  await registerFixtureKey('acme');
  ({ token: publisher } = await issue('publish', ['acme'], { name: 'release' }));
});

describe('provider docs through the publish API', { timeout: 60_000 }, () => {
  it('are stored with the version and shown on its docs pages, escaped; the same docs again change nothing, other docs are 409', async () => {
    const release = await buildRelease('documented', '1.0.0');
    const result = await publishRelease(publisher, 'acme', release, { docs: docs('documented') });
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(200);
    expect(JSON.parse((await env.REGISTRY_KV.get(docsKey({ hostname: HOST, namespace: 'acme', type: 'documented' }, '1.0.0'), 'text'))!)).toEqual(
      docs('documented'),
    );
    const index = await get('/providers/acme/documented/1.0.0/docs', { headers: { accept: 'text/html' } });
    expect(index.status).toBe(200);
    const page = await index.text();
    expect(page).toContain('documented_server');
    const resource = await (await get('/providers/acme/documented/1.0.0/docs/resources/documented_server', { headers: { accept: 'text/html' } })).text();
    expect(resource).toContain('disk');

    const again = await startPublish(publisher, 'acme', release, await manifestOf(release, { docs: docs('documented') }));
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ status: 'unchanged' });
    const other = await startPublish(publisher, 'acme', release, await manifestOf(release, { docs: docs('documented', 'Another description.') }));
    expect(other.status).toBe(409);
    expect(await other.text()).toContain('already has different docs');
  });

  it('an upload whose version was published meanwhile with other bytes is 409 and leaves its docs unwritten', async () => {
    const mine = await buildRelease('overtaken', '1.0.0', { salt: 'mine' });
    const theirs = await buildRelease('overtaken', '1.0.0', { salt: 'theirs' });
    const session = (await (await startPublish(publisher, 'acme', mine, await manifestOf(mine, { docs: docs('overtaken') }))).json()) as Session;
    for (const file of session.files) expect((await put(publisher, file.url, mine.files.get(file.filename)!)).status).toBe(200);
    expect((await publishRelease(publisher, 'acme', theirs)).committed?.status).toBe(200);

    const late = await commit(publisher, session);
    expect(late.status).toBe(409);
    expect(await late.text()).toContain('already published with different contents');
    // Docs are immutable once written: attaching these to the other release would be for good.
    expect(await env.REGISTRY_KV.get(docsKey({ hostname: HOST, namespace: 'acme', type: 'overtaken' }, '1.0.0'))).toBeNull();
  });

  it('a version published without docs gets them by publishing it again with docs', async () => {
    const release = await buildRelease('later', '1.0.0');
    expect((await publishRelease(publisher, 'acme', release)).committed?.status).toBe(200);
    const key = docsKey({ hostname: HOST, namespace: 'acme', type: 'later' }, '1.0.0');
    expect(await env.REGISTRY_KV.get(key)).toBeNull();
    const dry = await startPublish(publisher, 'acme', release, await manifestOf(release, { docs: docs('later'), dry_run: true }));
    expect(dry.status).toBe(200);
    expect(await env.REGISTRY_KV.get(key)).toBeNull();
    const added = await startPublish(publisher, 'acme', release, await manifestOf(release, { docs: docs('later') }));
    expect(added.status).toBe(200);
    expect(await env.REGISTRY_KV.get(key)).not.toBeNull();
  });

  it.each<[string, object, RegExp]>([
    ['not an object', { docs: 'docs' }, /docs must be an object/],
    ['another provider', { docs: docs('other') }, /docs\.provider must be "refused"/],
    ['an unknown source', { docs: { ...docs('refused'), source: 'html' } }, /docs\.source must be/],
    ['an unknown field', { docs: docs('refused', 'x', { script: '<script>' }) }, /docs: unknown field "script"/],
    [
      'a bad attribute mode',
      { docs: { ...docs('refused'), resources: [{ name: 'r', schema: { attributes: [{ name: 'a', type: 'string', mode: 'sometimes' }], blocks: [] } }] } },
      /docs\.resources\[0\]\.schema\.attributes\[0\]\.mode must be one of/,
    ],
    [
      'a name with markup',
      { docs: { ...docs('refused'), resources: [{ name: '<img src=x>', schema: { attributes: [], blocks: [] } }] } },
      /docs\.resources\[0\]\.name must be a name/,
    ],
    ['text over 64 KiB', { docs: docs('refused', 'x'.repeat(70_000)) }, /docs\.providerSchema\.description must be text of at most/],
  ])('refuses docs with %s (400), writing nothing', async (_, extra, message) => {
    const release = await buildRelease('refused', '1.0.0');
    const response = await startPublish(publisher, 'acme', release, await manifestOf(release, extra));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errors: string[] }).errors.join('\n')).toMatch(message);
    expect(await env.REGISTRY_KV.get(docsKey({ hostname: HOST, namespace: 'acme', type: 'refused' }, '1.0.0'))).toBeNull();
  });
});
