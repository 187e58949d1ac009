import { join } from 'node:path';
import { parsePublisherInput } from '../src/access/publishers';
import { attesterFor } from '../src/provenance/attest';
import { signEnvelope } from '../src/protocol/dsse';
import { buildProvenance } from '../src/provenance/statement';
import { currentAttestationKey } from '../src/store/keys/attestation-keys';
import { attestationKeysKey } from '../src/store/layout';
import { writePublishers } from '../src/store/publishers/write';
import { writeSigningKeys } from '../src/store/providers/signing-keys';
import type { BlobStore, KvStore } from '../src/store/store';
import { publishRelease } from '../scripts/lib/provider/publish';
import { githubClaims, startCiIssuers } from '../test/fixtures/ci-issuers';
import { writeDist, writeKeyFile } from '../test/scripts/helpers';
import { freePort } from '../test/e2e/server';
import { build } from './build';
import { startRuntime, VARS } from './runtime';
import { workerProfiler } from './worker-cpu';
import { median, script } from './report';

const HOST = VARS.REGISTRY_HOSTNAME;
const REPO = 'acme/terraform-provider-thing';
const VERSIONS = ['1.0.0', '1.0.1', '1.0.2', '1.0.3', '1.0.4', '1.0.5'];

export interface ProvenanceCpu {
  statements: boolean;
  /** Median over the versions after the first (which also makes the first attestation key). */
  publishMs: number;
  commitMs: number;
  firstCommitMs: number;
  statementObjects: number;
  /** CPU of making one statement in this process (open the sealed key, build, sign, hash): Node's, an estimate of workerd's. */
  statementCpuMs?: number;
  /** CPU of reading the keys object from (Miniflare's) R2 and opening the sealed key, in this process. */
  keyOpenCpuMs?: number;
  /** Both, as the commit runs them (attester.sign). */
  wholeCpuMs?: number;
  /** The R2 read of the keys object alone through Miniflare's client (what keyOpenCpuMs includes that workerd does natively). */
  r2ReadCpuMs?: number;
}

export async function benchProvenance(work: string, log: (line: string) => void = () => {}): Promise<ProvenanceCpu[]> {
  const ci = await startCiIssuers();
  const bundlePath = await build(work, null);
  const results: ProvenanceCpu[] = [];
  try {
    for (const statements of [false, true]) {
      const inspectorPort = await freePort();
      const runtime = await startRuntime({ bundlePath }, undefined, {
        inspectorPort,
        bindings: statements ? { SIGNING_KEY_SECRET: 'bench-signing-key-secret-0123456789abcdefgh' } : {},
      });
      try {
        const kv = (await runtime.mf.getKVNamespace('REGISTRY_KV')) as unknown as KvStore;
        const blobs = (await runtime.mf.getR2Bucket('REGISTRY_R2')) as unknown as BlobStore;
        const key = await writeKeyFile(work, `bench-${statements}.asc`, 'ecc');
        await writeSigningKeys(kv, HOST, 'acme', [{ key_id: key.keyId, ascii_armor: key.publicArmor }]);
        await writePublishers({ kv, blobs }, HOST, 'acme', [
          await parsePublisherInput({ issuer: ci.github.url, repository: REPO, workflow: 'release.yml', ref: 'refs/tags/v*', packages: ['acme/thing'] }),
        ]);
        const profiler = await workerProfiler(inspectorPort, runtime.pid);
        const publishes: number[] = [];
        const commits: number[] = [];
        try {
          for (const version of VERSIONS) {
            const dist = await writeDist(join(work, `dist-${statements}-${version}`), 'thing', version);
            const token = await ci.github.mint({ ...githubClaims(REPO, { ref: `refs/tags/v${version}` }), aud: HOST });
            const { cpu } = await profiler.record(() =>
              publishRelease({
                paths: [dist],
                namespace: 'acme',
                keyFile: key.path,
                registry: runtime.origin,
                processEnv: { ...process.env, EDGE_REGISTRY_ID_TOKEN: token, EDGE_REGISTRY_TOKEN: '', EDGE_REGISTRY_SIGNING_KEY: '' },
              }),
            );
            publishes.push(cpu.requests.reduce((s, r) => s + r.cpuMs, 0));
            commits.push(cpu.requests.find((r) => r.request.includes('/commit'))?.cpuMs ?? NaN);
          }
        } finally {
          profiler.close();
        }
        const statementObjects = (await blobs.list({ prefix: '.provenance/' })).objects.length;
        let statementCpuMs: number | undefined;
        let keyOpenCpuMs: number | undefined;
        let wholeCpuMs: number | undefined;
        let r2ReadCpuMs: number | undefined;
        if (statements) {
          // The statement's own work, without the noise of a whole publish: the attester the commit uses, 100 times.
          const claims = { ...githubClaims(REPO, { ref: 'refs/tags/v9.9.9' }), iss: ci.github.url };
          const publisher = await parsePublisherInput({
            issuer: ci.github.url,
            repository: REPO,
            workflow: 'release.yml',
            ref: 'refs/tags/v*',
            packages: ['acme/thing'],
          });
          const attester = attesterFor(
            { kind: 'ci', issuer: ci.github.url, subject: 'x' },
            { claims, publisher, actor: { kind: 'ci', issuer: ci.github.url, subject: 'x' } },
            { hostname: HOST, signingKeySecret: 'bench-signing-key-secret-0123456789abcdefgh' },
            blobs,
          );
          const subjects = ['linux_amd64', 'darwin_arm64', 'windows_amd64', 'SHA256SUMS'].map((n) => ({
            name: `terraform-provider-thing_9.9.9_${n}`,
            digest: { sha256: 'ab'.repeat(32) },
          }));
          await attester.sign(subjects, { address: `${HOST}/acme/thing`, version: '9.9.9' });
          const cpu = async (work: () => Promise<unknown>) => {
            const start = process.cpuUsage();
            for (let i = 0; i < 100; i++) await work();
            const used = process.cpuUsage(start);
            return (used.user + used.system) / 1000 / 100;
          };
          // The crypto and JSON alone (key opened once), then the key read from R2 and opened (Miniflare's R2 client in this process included).
          const opened = await currentAttestationKey(blobs, 'bench-signing-key-secret-0123456789abcdefgh', HOST);
          statementCpuMs = await cpu(async () => {
            const { statement } = buildProvenance(claims, publisher, subjects, { hostname: HOST, publishedAt: new Date().toISOString() });
            const envelope = new TextEncoder().encode(
              JSON.stringify(await signEnvelope(new TextEncoder().encode(JSON.stringify(statement)), opened.privateKey, opened.kid)),
            );
            await crypto.subtle.digest('SHA-256', envelope);
          });
          keyOpenCpuMs = await cpu(() => currentAttestationKey(blobs, 'bench-signing-key-secret-0123456789abcdefgh', HOST));
          wholeCpuMs = await cpu(() => attester.sign(subjects, { address: `${HOST}/acme/thing`, version: '9.9.9' }));
          r2ReadCpuMs = await cpu(async () => (await blobs.get(attestationKeysKey(HOST)))!.text());
        }
        results.push({
          statements,
          publishMs: median(publishes.slice(1)),
          commitMs: median(commits.slice(1)),
          firstCommitMs: commits[0]!,
          statementObjects,
          ...(statementCpuMs !== undefined ? { statementCpuMs, keyOpenCpuMs, wholeCpuMs, r2ReadCpuMs } : {}),
        });
        log(
          `provenance: ${statements ? 'with' : 'without'} statements: publish ${results.at(-1)!.publishMs.toFixed(1)} ms, commit ${results.at(-1)!.commitMs.toFixed(1)} ms (first commit ${commits[0]!.toFixed(1)} ms); per publish ${publishes.map((p) => p.toFixed(1)).join(', ')}; commits ${commits.map((c) => c.toFixed(1)).join(', ')}`,
        );
      } finally {
        await runtime.dispose();
      }
    }
  } finally {
    await ci.close();
  }
  return results;
}

await script(
  import.meta,
  'provenance',
  async (work) => {
    const [without, withStatements] = await benchProvenance(work, console.log);
    console.log(`\nsigned provenance, Worker CPU of a keyless 3-platform publish (median of ${VERSIONS.length - 1} after a warm-up):`);
    console.log(`  without statements: ${without!.publishMs.toFixed(1)} ms per publish, commit request ${without!.commitMs.toFixed(1)} ms`);
    console.log(
      `  with statements:    ${withStatements!.publishMs.toFixed(1)} ms per publish, commit request ${withStatements!.commitMs.toFixed(1)} ms ` +
        `(the first commit, which also makes the attestation key: ${withStatements!.firstCommitMs.toFixed(1)} ms)`,
    );
    const w = withStatements!;
    console.log(
      `  one statement in Node: build + Ed25519 sign + SHA-256 ${w.statementCpuMs!.toFixed(2)} ms CPU; reading the keys object and opening the sealed key ${w.keyOpenCpuMs!.toFixed(2)} ms (of which the R2 read through Miniflare's client alone: ${w.r2ReadCpuMs!.toFixed(2)} ms); both ${w.wholeCpuMs!.toFixed(2)} ms`,
    );
    console.log(`  statement objects written: ${withStatements!.statementObjects} for ${VERSIONS.length} publishes (one R2 write each)`);
  },
  { inspector: true },
);
