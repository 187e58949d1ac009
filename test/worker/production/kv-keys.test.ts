import { env } from 'cloudflare:workers';
import { afterAll, describe, expect, it } from 'vitest';
import type { Env } from '../../../src/env';
import { parsePolicy } from '../../../src/protocol/mirror-policy';
import { forgetPullThroughMemory } from '../../../src/mirror/pull-through';
import { clearPolicy, writePolicy } from '../../../src/store/mirror/policy';
import { KeyTooLongError } from '../../../src/store/errors';
import { mirrorVersionKey } from '../../../src/store/layout';
import { storeMirroredVersion } from '../../../src/store/mirror/write';
import type { BlobStore, KvStore } from '../../../src/store/store';
import { fakeRelease } from '../../fixtures/release';
import { KV_MAX_KEY_BYTES } from '../../fixtures/production/rules';
import { issue } from '../publish/api';
import { at, ORIGIN, production } from './scenario';

// KV's 512-byte key limit against every way in whose KV key is built from the request's address: through the
// Worker's real routes, on the production harness (its KV throws as the binding does for a key over 512 bytes),
// a name whose key could not fit is answered 404 ("no such name can exist here", naming the limit) for a read —
// nothing can ever be stored under it, as every write of it is refused — and 400 for a write, with nothing
// written and no 5xx. The one check is src/store/key-limits.ts's checkKvKey: every KV operation goes through
// keyLimitedKv (installed on the Env by src/index.ts), and a pull-through checks the longest key it would
// write (checkProviderKeys in manifestFor) before the upstream, which nothing listens for here, is asked.

const bindings = env as unknown as Env;
/** 253 characters: the longest hostname (our REGISTRY_HOSTNAME here) and another one (a mirrored provider's). */
const OWN = ['h', 'i', 'j'].map((c) => c.repeat(63)).join('.') + `.${'k'.repeat(61)}`;
const FOREIGN = ['u', 'v', 'w'].map((c) => c.repeat(63)).join('.') + `.${'x'.repeat(61)}`;
const NS = `long${'n'.repeat(60)}`;
const TYPE = `t${'y'.repeat(63)}`;
const NAME = `m${'o'.repeat(63)}`;
const SYSTEM = `s${'y'.repeat(63)}`;
/** 128 characters: the longest version; with the names above every key of a version passes 512 bytes. */
const V128 = `1.0.0+build.${'b'.repeat(116)}`;
/** 100 characters: VERSION.json's key fits, the download documents a pull would write (longer) do not. */
const V100 = `1.0.0+build.${'b'.repeat(88)}`;

/** Every KV key and R2 object the registry holds: a refusal leaves them as they were. */
async function everything(): Promise<string[]> {
  const kv = (await bindings.REGISTRY_KV.list()).keys.map((k) => `kv:${k.name}`);
  const r2 = (await bindings.REGISTRY_R2.list()).objects.map((o) => `r2:${o.key}`);
  return [...kv, ...r2].sort();
}

const HTML = { headers: { accept: 'text/html' } };
const v = encodeURIComponent;

/**
 * [route family, path, init, expected status, whether the answer names KV's limit]: every one asks for a name
 * whose KV keys pass 512 bytes. Those marked false look the version up in a document whose key fits (the page
 * data, the version list, the OCI tags) and answer their ordinary 404 without building the longer key.
 */
type Row = [string, string, RequestInit | undefined, number, boolean];
const READS: Row[] = [
  ['providers.v1 download', `/v1/providers/${NS}/${TYPE}/${v(V128)}/download/linux/amd64`, undefined, 404, true],
  ['modules.v1 download (not proxied)', `/v1/modules/${NS}/${NAME}/${SYSTEM}/${v(V128)}/download`, undefined, 404, true],
  ['network mirror VERSION.json (held only)', `/v1/mirror/${FOREIGN}/${NS}/${TYPE}/${v(V128)}.json`, undefined, 404, true],
  ['provider version page', `/providers/${NS}/${TYPE}/${v(V128)}`, HTML, 404, false],
  ['provider docs page', `/providers/${NS}/${TYPE}/${v(V128)}/docs`, HTML, 404, true],
  ['module version page', `/modules/${NS}/${NAME}/${SYSTEM}/${v(V128)}`, HTML, 404, false],
  ['mirror page of a version', `/mirror/${FOREIGN}/${NS}/${TYPE}?version=${v(V128)}`, HTML, 404, false],
  ['OCI module manifest', `/v2/modules/${NS}/${NAME}/${SYSTEM}/manifests/${V128.replace('+', '_')}`, undefined, 404, false],
  ['OCI provider manifest', `/v2/providers/${FOREIGN}/${NS}/${TYPE}/manifests/${V128.replace('+', '_')}`, undefined, 404, false],
  ['provider provenance', `/v1/provenance/providers/${NS}/${TYPE}/${v(V128)}`, undefined, 404, true],
  ['module provenance', `/v1/provenance/modules/${NS}/${NAME}/${SYSTEM}/${v(V128)}`, undefined, 404, true],
];

/** The same under a pull-through policy for FOREIGN (its upstream at an address nothing listens on). */
const PULLS: Row[] = [
  ['pull-through VERSION.json (its key over 512)', `/v1/mirror/${FOREIGN}/${NS}/${TYPE}/${v(V128)}.json`, undefined, 404, true],
  ['pull-through VERSION.json (its documents over 512)', `/v1/mirror/${FOREIGN}/${NS}/${TYPE}/${v(V100)}.json`, undefined, 404, true],
  ['pull-through archive', `/v1/archives/${FOREIGN}/${NS}/${TYPE}/${v(V100)}/terraform-provider-${TYPE}_${v(V100)}_linux_amd64.zip`, undefined, 404, true],
  ['pull-through OCI manifest', `/v2/providers/${FOREIGN}/${NS}/${TYPE}/manifests/${V100.replace('+', '_')}`, undefined, 404, true],
];

const measured: string[] = [];

afterAll(async () => {
  await clearPolicy(bindings.REGISTRY_KV);
  forgetPullThroughMemory();
  console.log(`KV keys over ${KV_MAX_KEY_BYTES} bytes, route by route:\n${measured.join('\n')}`);
});

async function refused(p: ReturnType<typeof production>, [label, path, init, status, namesLimit]: Row) {
  const before = await everything();
  const answer = await at(p, 'A', path, init);
  measured.push(`| ${label} | ${answer.status} |`);
  expect(answer.status, `${label}: ${answer.text.slice(0, 300)}`).toBe(status);
  if (namesLimit) expect(answer.text, label).toContain(`Workers KV takes keys of at most ${KV_MAX_KEY_BYTES} bytes`);
  expect(p.invocations.filter((i) => i.status >= 500)).toEqual([]);
  expect(p.invocations.at(-1)!.counts.kvWrites, label).toBe(0);
  expect(await everything(), label).toEqual(before);
}

describe('a name whose KV key would pass 512 bytes, through every read route', () => {
  it('the names are at their maximum lengths and the keys really pass the limit', () => {
    expect([OWN.length, FOREIGN.length, NS.length, TYPE.length, NAME.length, SYSTEM.length, V128.length, V100.length]).toEqual([
      253, 253, 64, 64, 64, 64, 128, 100,
    ]);
    const address = { hostname: FOREIGN, namespace: NS, type: TYPE };
    expect(new TextEncoder().encode(mirrorVersionKey(address, V100)).byteLength).toBeLessThanOrEqual(KV_MAX_KEY_BYTES);
    expect(new TextEncoder().encode(mirrorVersionKey(address, V128)).byteLength).toBeGreaterThan(KV_MAX_KEY_BYTES);
  });

  for (const row of READS) {
    it(`${row[0]}: ${row[3]}${row[4] ? ' naming the limit' : ''}, nothing written`, async () => {
      await refused(production({ vars: { INDEX_CACHE_SECONDS: '0', REGISTRY_HOSTNAME: OWN } }), row);
    });
  }
});

describe('pull-through of a version whose keys would pass 512 bytes', () => {
  for (const row of PULLS) {
    it(`${row[0]}: ${row[3]} naming the limit before the upstream is asked, nothing written`, async () => {
      await writePolicy(
        bindings.REGISTRY_KV,
        parsePolicy(
          JSON.stringify({
            providers: [{ source: `${FOREIGN}/${NS}/*`, versions: '>= 0' }],
            hosts: { [FOREIGN]: { 'providers.v1': 'http://127.0.0.1:9/v1/providers/' } },
          }),
          'test policy',
        ),
      );
      forgetPullThroughMemory();
      await refused(production({ vars: { INDEX_CACHE_SECONDS: '0', REGISTRY_HOSTNAME: OWN } }), row);
    });
  }
});

describe('a write of a name whose KV key would pass 512 bytes', () => {
  it('mirror sync and import (storeMirroredVersion, on the bare bindings): refused before anything is read or written', async () => {
    const record = fakeRelease({ hostname: FOREIGN, namespace: NS, type: TYPE }, V100, ['linux_amd64'], { archiveSize: 16 }).record;
    const store = { kv: bindings.REGISTRY_KV as unknown as KvStore, blobs: bindings.REGISTRY_R2 as unknown as BlobStore };
    const before = await everything();
    const refusal = await storeMirroredVersion(store, record, []).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(KeyTooLongError);
    expect((refusal as KeyTooLongError).access).toBe('write');
    expect((refusal as Error).message).toContain(`Workers KV takes keys of at most ${KV_MAX_KEY_BYTES} bytes`);
    expect(await everything()).toEqual(before);
  });

  it('a module lifecycle change of such a version: 404 (no such version), nothing but the lease record written', async () => {
    const p = production({ vars: { INDEX_CACHE_SECONDS: '0', REGISTRY_HOSTNAME: OWN } });
    const { token } = await issue('publish', [NS]);
    const before = await everything();
    const response = await p.fetch(
      'A',
      new Request(new URL(`/v1/publish/lifecycle/modules/${NS}/${NAME}/${SYSTEM}`, ORIGIN), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ action: 'withdraw', version: V128, message: 'bad' }),
      }),
    );
    const text = await response.text();
    measured.push(`| module lifecycle POST (withdraw) | ${response.status} |`);
    expect(response.status, text).toBe(404);
    expect(p.invocations.filter((i) => i.status >= 500)).toEqual([]);
    // A lifecycle change takes the module's lease before it looks (as for any version it does not hold); the
    // lease record and the audit entry are all it leaves.
    const stored = (keys: string[]) => keys.filter((k) => !k.startsWith('r2:.audit/') && !k.startsWith('r2:.leases/'));
    expect(stored(await everything())).toEqual(stored(before));
  });

  it('a provider publish of such a version: 400 at its start naming the limit', async () => {
    const p = production({ vars: { INDEX_CACHE_SECONDS: '0', REGISTRY_HOSTNAME: OWN } });
    const { token } = await issue('publish', [NS]);
    const before = await everything();
    const response = await p.fetch(
      'A',
      new Request(new URL(`/v1/publish/providers/${NS}/${TYPE}/${v(V128)}`, ORIGIN), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{}',
      }),
    );
    const text = await response.text();
    measured.push(`| provider publish POST | ${response.status} |`);
    expect(response.status, text).toBe(400);
    expect(text).toContain(`at most ${KV_MAX_KEY_BYTES} bytes`);
    expect(await everything()).toEqual(before);
  });
});
