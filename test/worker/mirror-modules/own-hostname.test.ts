import { env } from 'cloudflare:workers';
import { afterAll, describe, expect, it } from 'vitest';
import type { Env } from '../../../src/env';
import { parsePolicy } from '../../../src/protocol/mirror-policy';
import { forgetPullThroughMemory } from '../../../src/mirror/pull-through';
import { clearPolicy, writePolicy } from '../../../src/store/mirror/policy';
import { get } from '../helpers';

/**
 * A module rule whose upstream is this registry itself would have the proxy
 * fetch its own answers in a loop: such a rule is ignored (an ordinary 404),
 * and nothing is fetched — the host block points at an address nothing
 * listens on, so a fetch would show as a 502.
 */
const bindings = env as unknown as Env;

afterAll(async () => {
  await clearPolicy(bindings.REGISTRY_KV);
  forgetPullThroughMemory();
});

describe('module proxy: a rule pointing at our own hostname', () => {
  it('is not followed: 404 for the module, no upstream fetch', async () => {
    const own = bindings.REGISTRY_HOSTNAME;
    await writePolicy(
      bindings.REGISTRY_KV,
      parsePolicy(
        JSON.stringify({
          modules: [
            { source: `${own}/acme/*/*`, versions: '>= 0', as: 'loop' },
            { source: 'elsewhere.test/acme/*/*', versions: '>= 0', as: 'other' },
          ],
          hosts: {
            [own]: { 'modules.v1': 'http://127.0.0.1:9/v1/modules/' },
            'elsewhere.test': { 'modules.v1': 'http://127.0.0.1:9/v1/modules/' },
          },
        }),
        'test policy',
      ),
    );
    forgetPullThroughMemory();

    const looped = await get('/v1/modules/loop/vpc/aws/versions');
    expect(looped.status).toBe(404);
    expect(looped.headers.get('x-mirror-upstream')).toBeNull();
    expect((await get('/v1/modules/loop/vpc/aws/1.0.0/download')).status).toBe(404);
    // The same policy's other rule is followed: its unreachable upstream is a 502, which is what a loop rule would give.
    expect((await get('/v1/modules/other/vpc/aws/versions')).status).toBe(502);
  });
});
