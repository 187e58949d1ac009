import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { mapLimit } from '../../../src/concurrency';
import { changeProviderLifecycle } from '../../../src/store/lifecycle/providers';
import { committedRecordKey, mirrorIndexKey, providerPageKey, versionsDocumentKey } from '../../../src/store/layout';
import { emptyIndex, indexWith, writeProviderIndex } from '../../../src/store/providers/version-index';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import { fakeRelease } from '../../fixtures/release';
import { address } from '../helpers';
import { zipStored } from '../../fixtures/archives';
import { TEST_KEY } from '../../fixtures/release';
import { KV_MAX_KEY_BYTES, KV_MAX_VALUE_BYTES } from '../../fixtures/production/rules';
import { buildRelease, hex, issue, manifestOf, type Session } from '../publish/api';
import { at, ORIGIN, production } from './scenario';

// KV's key limit (512 bytes) against the longest names the registry accepts: a 253-character hostname
// (REGISTRY_HOSTNAME), 64-character namespace, type, module name and system, and a 128-character version
// with pre-release and build metadata. Every key the store writes for them must fit, or the publish must be
// refused at its start with a clear 4xx naming the limit — never a 5xx at the commit.

const LABEL = (c: string, n: number) => c.repeat(n);
/** 253 characters: three 63-character labels and a 61-character one. */
const LONG_HOST = [LABEL('h', 63), LABEL('i', 63), LABEL('j', 63), LABEL('k', 61)].join('.');
const NS = `long${'n'.repeat(60)}`;
const TYPE = `t${'y'.repeat(63)}`;
const NAME = `m${'o'.repeat(63)}`;
const SYSTEM = `s${'y'.repeat(63)}`;
/** 128 characters: 1.0.0-PRERELEASE+BUILD. */
const VERSION = `1.0.0-rc.${'a'.repeat(56)}+build.${'b'.repeat(128 - 9 - 56 - 7)}`;

describe('KV keys at the longest names the registry accepts', () => {
  it('names and version are at their maximum lengths', () => {
    expect([LONG_HOST.length, NS.length, TYPE.length, NAME.length, SYSTEM.length, VERSION.length]).toEqual([253, 64, 64, 64, 64, 128]);
  });

  for (const hostname of [LONG_HOST, 'registry.example.com']) {
    it(`a provider and a module at ${hostname.length}-character REGISTRY_HOSTNAME publish with every KV key within 512 bytes, or are refused at the start with a 4xx`, async () => {
      const p = production({ vars: { INDEX_CACHE_SECONDS: '0', REGISTRY_HOSTNAME: hostname } });
      await writeSigningKeys(env.REGISTRY_KV, hostname, NS, [TEST_KEY]);
      const { token } = await issue('publish', [NS]);
      const auth = { authorization: `Bearer ${token}` };
      const send = async (path: string, init: RequestInit) => p.fetch('A', new Request(new URL(path, ORIGIN), init));

      // Provider: 14 platforms would not lengthen the longest key; two with the longest names Terraform builds.
      const release = await buildRelease(TYPE, VERSION, { platforms: ['linux_amd64', 'windows_arm64'] });
      const started = await send(`/v1/publish/providers/${NS}/${TYPE}/${VERSION}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(await manifestOf(release)),
      });
      const provider = await publishThrough(send, auth, started, (f) => release.files.get(f)!);

      const pkg = zipStored({ 'main.tf': 'variable "x" {}\n' });
      const moduleStarted = await send(`/v1/publish/modules/${NS}/${NAME}/${SYSTEM}/${VERSION}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({
          format: 'zip',
          size: pkg.byteLength,
          sha256: await hex(pkg),
          docs: { inputs: [], outputs: [], providers: [], requiredVersion: null, submodules: [] },
        }),
      });
      const module = await publishThrough(send, auth, moduleStarted, () => pkg);

      // No invocation answered 5xx; every KV key written fits.
      expect(p.invocations.filter((i) => i.status >= 500)).toEqual([]);
      expect(p.kv.largest.keyBytes).toBeLessThanOrEqual(KV_MAX_KEY_BYTES);
      for (const outcome of [provider, module]) {
        if (outcome.status === 200) continue;
        // Refused: at the start, a 4xx naming the limit, nothing written for it.
        expect(outcome.step, outcome.text).toBe('start');
        expect(outcome.status).toBeGreaterThanOrEqual(400);
        expect(outcome.status).toBeLessThan(500);
        expect(outcome.text).toMatch(/at most (512 bytes|256)/);
      }
      if (hostname !== LONG_HOST) {
        // At an ordinary hostname the provider publishes and installs at another location; the module's package
        // name (NAME-SYSTEM-VERSION.tar.gz, 264 characters in its URL) is refused at the start.
        expect([provider.status, module.status]).toEqual([200, 400]);
        expect(module.text).toContain('at most 256');
        expect((await at(p, 'B', `/v1/providers/${NS}/${TYPE}/${encodeURIComponent(VERSION)}/download/windows/arm64`)).status).toBe(200);
      } else {
        expect([provider.status, module.status]).toEqual([400, 400]);
        expect(provider.text).toContain('would be 567 bytes');
      }
      // The figure for the docs.
      console.log(`REGISTRY_HOSTNAME of ${hostname.length}: longest KV key written ${p.kv.largest.keyBytes} bytes (${p.kv.largest.key.slice(0, 40)}…)`);
    }, 60_000);
  }
});

// KV's value limit (25 MiB) against the largest lists the registry rewrites: the versions document and the
// mirror's index.json of a provider with 1,000 versions (the size the budgets promise) of 14 platforms
// (HashiCorp's scaffolding), each version 128 characters long.
const PLATFORMS_14 = [
  'darwin_amd64',
  'darwin_arm64',
  'freebsd_386',
  'freebsd_amd64',
  'freebsd_arm',
  'freebsd_arm64',
  'linux_386',
  'linux_amd64',
  'linux_arm',
  'linux_arm64',
  'windows_386',
  'windows_amd64',
  'windows_arm',
  'windows_arm64',
];

describe('KV values at the largest lists the registry writes', () => {
  const long = (i: number) => `${i}.0.0-rc.${'a'.repeat(56)}+build.${String(i).padStart(57 - String(i).length, 'b')}`;
  const short = (i: number) => `${Math.floor(i / 100)}.${i % 100}.0`;
  for (const [shape, version] of [
    ['128-character', long],
    ['short (X.Y.0)', short],
  ] as const) {
    it(`a provider with 1,000 versions of 14 platforms, ${shape} versions: every list and page document it writes stays under 25 MiB`, async () => {
      const p = production();
      const many = address('kvsizes', shape.startsWith('128') ? 'long' : 'short');
      const records = Array.from({ length: 1000 }, (_, i) => fakeRelease(many, version(i), PLATFORMS_14, { archiveSize: 16 }).record);
      if (shape.startsWith('128')) expect(records.every((r) => r.version.length === 128)).toBe(true);
      await mapLimit(records, 64, (record) => env.REGISTRY_R2.put(committedRecordKey(many, record.version), JSON.stringify(record)).then(() => {}));
      await writeProviderIndex(env.REGISTRY_R2, indexWith(emptyIndex(many), records, {}), null);
      // A lifecycle change rewrites the lists and the page data from the index, through the harness's KV (which
      // refuses a value over 25 MiB as the binding does).
      await p.run('A', (e) =>
        changeProviderLifecycle({ kv: e.REGISTRY_KV, blobs: e.REGISTRY_R2 }, many, { kind: 'deprecate', version: version(0), message: 'old' }),
      );
      expect(p.invocations[0]!.exceeded).toBeNull();
      const size = async (key: string) => new TextEncoder().encode((await env.REGISTRY_KV.get(key, 'text')) ?? '').byteLength;
      const [versionsDoc = 0, mirrorIndex = 0, page = 0] = await Promise.all(
        [versionsDocumentKey(many), mirrorIndexKey(many), providerPageKey(many)].map(size),
      );
      // The largest value written is the provider's page data (every version's files and digests).
      expect(p.kv.largest.valueKey).toBe(providerPageKey(many));
      expect(p.kv.largest.valueBytes).toBe(page);
      expect(page).toBeLessThan(KV_MAX_VALUE_BYTES);
      expect(Math.max(versionsDoc, mirrorIndex)).toBeLessThan(page);
      console.log(
        `1,000 versions × 14 platforms (${shape}): versions document ${versionsDoc} bytes, mirror index.json ${mirrorIndex} bytes, page data ${page} bytes; the page data reaches 25 MiB at ~${Math.floor(KV_MAX_VALUE_BYTES / (page / 1000))} versions`,
      );
    }, 120_000);
  }
});

/** Uploads each file of a started session and commits; the step that stopped it and its answer. */
async function publishThrough(
  send: (path: string, init: RequestInit) => Promise<Response>,
  auth: Record<string, string>,
  started: Response,
  bytesOf: (filename: string) => Uint8Array,
): Promise<{ step: 'start' | 'upload' | 'commit'; status: number; text: string }> {
  if (started.status !== 201) return { step: 'start', status: started.status, text: await started.text() };
  const session = (await started.json()) as Session;
  for (const file of session.files) {
    const bytes = bytesOf(file.filename);
    const uploaded = await send(file.url, { method: 'PUT', headers: { ...auth, 'content-length': String(bytes.byteLength) }, body: bytes });
    if (uploaded.status !== 200) return { step: 'upload', status: uploaded.status, text: await uploaded.text() };
  }
  const committed = await send(session.commit_url, { method: 'POST', headers: auth });
  return { step: 'commit', status: committed.status, text: await committed.text() };
}
