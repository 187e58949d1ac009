import { env } from 'cloudflare:workers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../../src/env';
import { parsePolicy } from '../../../src/protocol/mirror-policy';
import { forgetPullThroughMemory } from '../../../src/mirror/pull-through';
import { clearPolicy, writePolicy } from '../../../src/store/mirror/policy';
import { moduleCatalogKey } from '../../../src/store/layout';
import { KV_MAX_VALUE_BYTES } from '../../../src/store/value-limits';
import { getWith } from '../helpers';

/**
 * The module proxy under Workers KV's key and value limits (src/store/module-limits.ts, the publish API's own
 * check): a proxied module version whose keys would pass 512 bytes, whose package name would be too long to be
 * served, or that would push the hostname's module catalogue past 25 MiB is refused 400 naming why, through the
 * Worker's real proxy route, before the upstream is asked and with nothing written. The upstream points at an
 * address nothing listens on, so a fetch would show as a 502 instead.
 */
const bindings = env as unknown as Env;
const HOST = bindings.REGISTRY_HOSTNAME;

/** Every KV key and R2 object the registry holds: a refusal leaves them as they were. */
async function everything(): Promise<string[]> {
  const kv = (await bindings.REGISTRY_KV.list()).keys.map((k) => `kv:${k.name}`);
  const r2 = (await bindings.REGISTRY_R2.list()).objects.map((o) => `r2:${o.key}`);
  return [...kv, ...r2].sort();
}

async function refused(vars: Partial<Env>, path: string): Promise<string> {
  const before = await everything();
  const response = await getWith(vars, path);
  const text = await response.text();
  expect(response.status, text).toBe(400);
  expect(await everything()).toEqual(before);
  return (JSON.parse(text) as { errors: string[] }).errors[0]!;
}

beforeAll(async () => {
  await writePolicy(
    bindings.REGISTRY_KV,
    parsePolicy(
      JSON.stringify({
        modules: [{ source: 'elsewhere.test/acme/*/*', versions: '>= 0', as: 'limits' }],
        hosts: { 'elsewhere.test': { 'modules.v1': 'http://127.0.0.1:9/v1/modules/' } },
      }),
      'test policy',
    ),
  );
  forgetPullThroughMemory();
});

afterAll(async () => {
  await clearPolicy(bindings.REGISTRY_KV);
  await bindings.REGISTRY_KV.delete(moduleCatalogKey(HOST));
  forgetPullThroughMemory();
});

describe('module proxy: a version that would not fit KV is refused before the upstream is asked', () => {
  it('a package name too long to be served (NAME-SYSTEM-VERSION.tar.gz over 256 characters): 400 naming it', async () => {
    const version = `1.0.0+${'b'.repeat(122)}`;
    const message = await refused({}, `/v1/modules/limits/${'n'.repeat(64)}/${'s'.repeat(64)}/${version}/download`);
    expect(message).toContain(`${HOST}/limits/${'n'.repeat(64)}/${'s'.repeat(64)} ${version} (proxied from elsewhere.test/acme/`);
    expect(message).toContain("its package's name would be 267 characters in the upload's URL (at most 256)");
  });

  it('a storage key over 512 bytes (a long registry hostname): 400 naming the key limit', async () => {
    // 253 characters: the longest hostname; with 64-character names and a 128-character version the download document's key is 539 bytes.
    const hostname = `${'h'.repeat(63)}.${'o'.repeat(63)}.${'s'.repeat(63)}.${'t'.repeat(57)}.com`;
    expect(hostname).toHaveLength(253);
    const message = await refused({ REGISTRY_HOSTNAME: hostname }, `/v1/modules/limits/${'n'.repeat(64)}/${'s'.repeat(64)}/1.0.0+${'p'.repeat(122)}/download`);
    expect(message).toContain('its longest storage key would be 539 bytes, and Workers KV takes keys of at most 512 bytes');
  });

  it('a module catalogue that would pass 25 MiB: 400 naming the value limit and the fix', async () => {
    // The hostname's catalogue one byte short of the limit: no new module version fits.
    const filler = { namespace: 'x', name: 'y', system: 'z', versions: [] as string[] };
    const base = JSON.stringify({ modules: [filler] }).length;
    filler.versions.push('v'.repeat(KV_MAX_VALUE_BYTES - base - 3));
    const catalog = JSON.stringify({ modules: [filler] });
    expect(catalog.length).toBe(KV_MAX_VALUE_BYTES - 1);
    await bindings.REGISTRY_KV.put(moduleCatalogKey(HOST), catalog);
    const message = await refused({}, '/v1/modules/limits/vpc/aws/1.0.0/download');
    expect(message).toContain(`${HOST}/limits/vpc/aws 1.0.0: the module catalogue of ${HOST} lists 1 module versions`);
    expect(message).toContain("over Workers KV's 25.00 MiB value limit: withdraw old module versions");
    expect(await bindings.REGISTRY_KV.get(moduleCatalogKey(HOST))).toBe(catalog);
  }, 60_000);
});
