import { formatAddress, InputError, parseHostname, parseProviderName, providerAddress, sha256Hex, type ProviderAddress } from '../../../src/protocol/index';
import { providerLeaseName } from '../../../src/store/layout';
import { generatedShasums } from '../../../src/protocol/provider-release';
import { draftVersionRecord } from '../../../src/store/providers/draft';
import { withLease, type Lease } from '../../../src/store/lease';
import { beginProviderPublish, publishVersion } from '../../../src/store/providers/write';
import { differentContentsError, readVersionRecord, sameRelease } from '../../../src/store/providers/version-records';
import { readSigningKeys, writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { PackageRecord, SigningKey, VersionRecord } from '../../../src/store/types';
import { readRegistryConfig, type RegistryConfig } from '../config';
import { CRASH_ENV, KILL_ENV, progressLog } from '../progress';
import { processLeaseOptions } from '../stores/lease';
import type { StoreHandle } from '../stores/handle';
import { openStore } from '../stores/open';
import { diskFile, memoryFile } from '../stores/release-files';
import { readRelease, type ReleasePlan } from './release';
import type { R2S3Options } from '../stores/r2-s3';
import { verifyDetached } from '../../../src/protocol/openpgp-signature';
import { chooseSigner, signDetached } from './sign';
import { readDocsFile } from './docs/index';
import { audited } from '../audit';
import { cliAttester } from '../provenance';
import { checkProvenancePolicy } from '../../../src/store/provenance';
import { publishToRegistry } from './publish-registry';
import { writeVersionDocs } from '../../../src/store/pages/write';
import type { ProviderDocs } from '../../../src/protocol/provider-docs-shape';
import type { PublishResult } from './result';

/**
 * publishRelease: the function behind `npm run publish-provider`, for the
 * CLI and for other scripts (demo, tests, benchmarks).
 *
 * Everything is validated before anything is written: the files (names,
 * version, platforms, zips and their executables, SHA256SUMS lines, the
 * manifest), the version's state in the store (identical → nothing to do;
 * different → refused, versions are immutable), a supplied signature
 * (verified against the namespace's public keys and published as is) or the
 * private key that will sign. Then the store module writes release files,
 * documents, the record and the lists in that order.
 */

export interface PublishOptions {
  /** goreleaser dist/ directories and/or release files. */
  paths?: string[];
  /** "OS_ARCH=PATH" raw executables to zip. */
  binaries?: string[];
  namespace: string;
  /** Override the type read from file names. */
  type?: string;
  /** Override the version read from file names. */
  version?: string;
  /** Write to Cloudflare (KV REST API + R2 S3 API) instead of the local state. */
  remote?: boolean;
  /** wrangler environment for --remote (e.g. "production"). */
  env?: string;
  /** Path of wrangler.toml (default ./wrangler.toml). */
  configPath?: string;
  /** Local state root like `wrangler dev --persist-to` (default <project>/.wrangler/state). */
  persistTo?: string;
  /** Override REGISTRY_HOSTNAME. */
  hostname?: string;
  /** Private signing key file (else EDGE_REGISTRY_SIGNING_KEY, else in local mode .keys/HOST/NS.asc). */
  keyFile?: string;
  /** Directory of local-mode keys (default <project>/.keys). */
  keysDir?: string;
  /** Validate and return the plan without writing anything. */
  dryRun?: boolean;
  /** Docs for the version's pages: a Provider Code Specification or `terraform providers schema -json` output (scripts/lib/docs). */
  docs?: string;
  /** Publish through this registry's publish API (URL) instead of writing storage: EDGE_REGISTRY_TOKEN or a CI OIDC token. */
  registry?: string;
  /** Human-readable lines (the CLI writes them to stderr). */
  log?: (line: string) => void;
  /** Environment for keys and --remote credentials (default process.env). */
  processEnv?: NodeJS.ProcessEnv;
  /** An already-open store (callers publishing many releases); not closed here. */
  store?: StoreHandle;
  /** An already-read config (with `store`). */
  config?: RegistryConfig;
  /** Multipart tuning for --remote (tests). */
  remoteTuning?: Pick<R2S3Options, 'multipartThreshold' | 'partSize' | 'region' | 'onProgress'>;
}

// What `--json` prints lives in ./result.ts (publish-registry.ts shares it).
export type { PublishedPlatform, PublishResult } from './result';

/**
 * Validates and publishes one provider version. Resolves with the result
 * (also for an identical re-run: status "unchanged"). Throws InputError for
 * anything the caller can fix, VersionConflictError when the version exists
 * with different bytes, LeaseBusyError when another publish holds the
 * provider (all exit 1 in the CLI), other errors for infrastructure
 * failures; nothing is written when validation fails.
 */
export async function publishRelease(options: PublishOptions): Promise<PublishResult> {
  const log = options.log ?? (() => {});
  const env = options.processEnv ?? process.env;
  const namespace = parseProviderName(options.namespace, 'namespace');
  if (options.registry !== undefined) return publishReleaseToRegistry(options, namespace, log, env);
  const config = options.config ?? (await readRegistryConfig({ configPath: options.configPath, env: options.env, persistTo: options.persistTo }));
  const hostname = options.hostname ? parseHostname(options.hostname) : config.hostname;

  const plan = await readRelease({
    paths: options.paths ?? [],
    binaries: options.binaries,
    type: options.type,
    version: options.version,
    log,
  });
  try {
    const address = providerAddress(hostname, namespace, plan.type);
    for (const note of plan.notes) log(`note: ${note}`);
    const docs = options.docs ? readDocsFile(options.docs, namespace, plan.type) : null;
    const uploadProgress = (key: string, sent: number) => {
      if (sent >= 64 * 1024 * 1024 || plan.archives.some((a) => key.endsWith(`/${a.filename}`) && a.digest.size >= 64 * 1024 * 1024)) {
        log(`  sent ${(sent / 1e6).toFixed(0)} MB of ${key.slice(key.lastIndexOf('/') + 1)}`);
      }
    };
    const store = options.store ?? (await openStore(config, { remote: options.remote, env, tuning: { onProgress: uploadProgress, ...options.remoteTuning } }));
    try {
      // Every publish that reaches the store leaves an audit entry (a dry run none): ok, unchanged, refused or failed.
      return await audited(
        options.dryRun ? null : store,
        options.remote,
        { action: 'provider.publish', target: `${formatAddress(address)} ${plan.version}` },
        () => publishPlan({ plan, address, store, config, options, log, env, docs }),
        (result) =>
          result.status === 'dry-run'
            ? null
            : {
                outcome: result.status === 'unchanged' ? 'unchanged' : 'ok',
                ...(result.status === 'repaired' ? { reason: 'repaired what an interrupted publish left missing' } : {}),
                digests: Object.fromEntries(result.platforms.map((p) => [p.filename, p.shasum])),
              },
      );
    } finally {
      if (!options.store) await store.close();
    }
  } finally {
    plan.cleanup();
  }
}

/** --registry: the same validation of the files, then the publish API (publish-registry.ts); no storage opened here. */
async function publishReleaseToRegistry(
  options: PublishOptions,
  namespace: string,
  log: (line: string) => void,
  env: NodeJS.ProcessEnv,
): Promise<PublishResult> {
  if (options.remote) throw new InputError("--registry publishes through the registry's API; --remote writes Cloudflare storage directly: use one");
  const plan = await readRelease({ paths: options.paths ?? [], binaries: options.binaries, type: options.type, version: options.version, log });
  try {
    for (const note of plan.notes) log(`note: ${note}`);
    // --docs: checked and normalised here as for a local publish, sent in the manifest, checked again by the server.
    const docs = options.docs ? readDocsFile(options.docs, namespace, plan.type) : undefined;
    return await publishToRegistry(plan, namespace, { registry: options.registry!, keyFile: options.keyFile, dryRun: options.dryRun, docs }, log, env);
  } finally {
    plan.cleanup();
  }
}

/** What publishPlan works from: the validated release, where it goes, and how the run was asked for. */
interface PlanContext {
  plan: ReleasePlan;
  address: ProviderAddress;
  store: StoreHandle;
  config: RegistryConfig;
  options: PublishOptions;
  log: (line: string) => void;
  env: NodeJS.ProcessEnv;
  docs: ProviderDocs | null;
}

/** The release as it will be stored: packages, SHA256SUMS bytes, the draft record, and the result it reports. */
interface Prepared {
  name: string;
  /** Writes the release's statement beside it (a publish attestation from the CLI; src/store/provenance.ts). */
  attest: ReturnType<typeof cliAttester>;
  packages: PackageRecord[];
  shasums: Uint8Array;
  draft: ReturnType<typeof draftVersionRecord>;
  result: (keyId: string, status: PublishResult['status']) => PublishResult;
  /** Decides on what the store holds (the version's record, the namespace's keys): refuses other bytes, finds the signer. */
  decide: (read: { existing: VersionRecord | null; namespaceKeys: SigningKey[] }) => Promise<Decision>;
}

interface Decision {
  existing: VersionRecord | null;
  supplied: SigningKey | null;
  signer: Awaited<ReturnType<typeof chooseSigner>> | null;
  keyId: string;
}

async function publishPlan(ctx: PlanContext): Promise<PublishResult> {
  // A namespace requiring build provenance refuses the CLI before anything is written (dry runs say so too).
  const attest = cliAttester(ctx.config, ctx.options.remote, ctx.store.blobs, ctx.env);
  await checkProvenancePolicy(ctx.store.blobs, ctx.address.hostname, ctx.address.namespace, attest);
  const prepared = prepare(ctx, attest);
  if (ctx.options.dryRun) return dryRun(ctx, prepared);
  const { address, store, log, env } = ctx;
  // One writer per provider: everything from here on holds the provider's lease.
  return withLease(store.blobs, providerLeaseName(address), processLeaseOptions(`publish-provider ${prepared.name}`, log), (lease) =>
    publishUnderLease(ctx, prepared, lease, progressLog(log, env[CRASH_ENV], env[KILL_ENV])),
  );
}

function prepare(ctx: PlanContext, attest: Prepared['attest']): Prepared {
  const { plan, address, config, options, log, env } = ctx;
  const packages = plan.archives.map((a) => ({
    os: a.platform.os,
    arch: a.platform.arch,
    filename: a.filename,
    shasum: a.digest.sha256Hex,
    h1: a.digest.h1,
    size: a.digest.size,
  }));
  // SHA256SUMS: supplied, or one sorted line per zip (deterministic, so a re-run makes the same bytes).
  const shasums = plan.shasums?.bytes ?? generatedShasums(packages);
  const draft = draftVersionRecord(address, plan.version, plan.protocols, packages, { sha256: sha256Hex(shasums), size: shasums.byteLength });
  const result = (keyId: string, status: PublishResult['status']): PublishResult => ({
    address: formatAddress(address),
    version: plan.version,
    protocols: plan.protocols,
    platforms: packages,
    key_id: keyId,
    status,
  });
  // What the store holds decides the rest: the version's record and the namespace's keys, each read once —
  // for a dry run now, otherwise under the lease (a publish decides on what it reads there).
  const decide = async ({ existing, namespaceKeys }: { existing: VersionRecord | null; namespaceKeys: SigningKey[] }): Promise<Decision> => {
    if (existing && !sameRelease(existing, draft)) throw differentContentsError(draft, existing);
    // Signature: verify a supplied one, or find the key that will sign.
    let supplied: SigningKey | null = null;
    if (plan.signature && plan.shasums) {
      supplied = await verifyDetached(plan.shasums.bytes, plan.signature.bytes, namespaceKeys, plan.signature.path);
      log(`${plan.signature.path}: signature verified with key ${supplied.key_id}; publishing it as is`);
    }
    const signer = existing || supplied ? null : await chooseSigner(address, config, namespaceKeys, options, env, log);
    const keyId = existing?.signingKey.key_id ?? supplied?.key_id ?? signer!.keyId;
    return { existing, supplied, signer, keyId };
  };
  return { name: `${formatAddress(address)} ${plan.version}`, packages, shasums, draft, result, decide, attest };
}

/** --dry-run: decides as a publish would, says what it would write, writes nothing. */
async function dryRun(ctx: PlanContext, prepared: Prepared): Promise<PublishResult> {
  const { plan, address, store, docs, log } = ctx;
  const { name, packages, draft, result } = prepared;
  const [existing, namespaceKeys] = await Promise.all([
    readVersionRecord(store, address, plan.version),
    readSigningKeys(store.kv, address.hostname, address.namespace),
  ]);
  const { supplied, signer, keyId } = await prepared.decide({ existing, namespaceKeys });
  if (existing) {
    if (docs) log(`docs: ${await writeVersionDocs(store.kv, address, plan.version, docs, true)}`);
    log(`dry run: ${name} is already published with these bytes; a run would verify it and complete anything missing`);
    return result(keyId, 'dry-run');
  }
  log(`dry run: would publish ${name} to ${store.description}:`);
  for (const p of packages) log(`  ${p.filename}  ${(p.size / 1e6).toFixed(1)} MB  zh:${p.shasum}  ${p.h1}`);
  log(
    `  ${draft.shasumsFilename}${plan.shasums ? ' (supplied)' : ''} and ${draft.shasumsSignatureFilename}${supplied ? ' (supplied)' : ` (signed with key ${keyId})`}`,
  );
  log(`  protocols ${JSON.stringify(plan.protocols)}`);
  if (signer?.pending) log(`  ${signer.pending}`);
  return result(keyId, 'dry-run');
}

/** The publish proper, under the provider's lease: verify and repair a stored version, or sign and publish a new one. */
async function publishUnderLease(ctx: PlanContext, prepared: Prepared, lease: Lease, progress: ReturnType<typeof progressLog>): Promise<PublishResult> {
  const { plan, address, store, docs, log } = ctx;
  const { name, packages, shasums, draft, result } = prepared;
  progress({ step: 'lease', detail: `holding ${providerLeaseName(address)}` });
  const [start, namespaceKeys] = await Promise.all([
    beginProviderPublish(store, address, plan.version, progress, () => lease.check()),
    readSigningKeys(store.kv, address.hostname, address.namespace),
  ]);
  const { supplied, signer } = await prepared.decide({ existing: start.existing, namespaceKeys });
  const current = start.existing;
  const archiveFiles = plan.archives.map((a) => diskFile(a.filename, a.path, a.digest, 'application/zip'));
  const sumsFile = memoryFile(draft.shasumsFilename, shasums, 'text/plain; charset=utf-8');
  const docsWritten = async (): Promise<Record<string, string>> => {
    if (!docs) return {};
    lease.check();
    log(
      `docs: ${await writeVersionDocs(store.kv, address, plan.version, docs)}${current ? '' : ` (${docs.resources.length} resources, ${docs.dataSources.length} data sources)`}`,
    );
    return { [plan.version]: docs.providerSchema.description ?? '' };
  };
  if (current) {
    const files = [
      archiveFiles,
      [sumsFile],
      supplied ? [memoryFile(draft.shasumsSignatureFilename, plan.signature!.bytes, 'application/pgp-signature')] : [],
    ].flat();
    const docsDone = await docsWritten();
    const outcome = await publishVersion(store, { ...current }, files, progress, {
      lease,
      existing: current,
      lists: start.lists,
      docs: docsDone,
      attest: prepared.attest,
    });
    log(
      outcome === 'repaired'
        ? `${name} was already published; repaired what was missing (see above)`
        : `${name} is already published with these bytes; verified, nothing to write`,
    );
    return result(current.signingKey.key_id, outcome === 'repaired' ? 'repaired' : 'unchanged');
  }

  const { signingKey, signature } = supplied
    ? { signingKey: supplied, signature: plan.signature!.bytes }
    : await signWithNewOrKnownKey(ctx, signer!, namespaceKeys, shasums, lease);
  const record: VersionRecord = { ...draft, signingKey, signatureFile: { sha256: sha256Hex(signature), size: signature.byteLength } };
  const files = [...archiveFiles, sumsFile, memoryFile(record.shasumsSignatureFilename, signature, 'application/pgp-signature')];
  log(`publishing ${name} to ${store.description}`);
  const docsDone = await docsWritten();
  const outcome = await publishVersion(store, record, files, progress, { lease, existing: null, lists: start.lists, docs: docsDone, attest: prepared.attest });
  if (outcome === 'published') {
    log(`published ${name} (${packages.length} platforms, signed by ${signingKey.key_id})`);
    return result(signingKey.key_id, 'published');
  }
  // Only a writer without the lease can have committed it meanwhile.
  const stored = await readVersionRecord(store, address, plan.version);
  log(`${name} was already published; nothing rewritten`);
  return result(stored?.signingKey.key_id ?? signingKey.key_id, 'unchanged');
}

/** Signs SHA256SUMS with the chosen key, registering its public half for the namespace first when it is new there. */
async function signWithNewOrKnownKey(
  ctx: PlanContext,
  signer: NonNullable<Decision['signer']>,
  namespaceKeys: SigningKey[],
  shasums: Uint8Array,
  lease: Lease,
): Promise<{ signingKey: SigningKey; signature: Uint8Array }> {
  const { address, store, log } = ctx;
  const key = await signer.load();
  const signingKey = key.publicKey;
  if (!namespaceKeys.some((k) => k.key_id === signingKey.key_id)) {
    lease.check();
    await writeSigningKeys(store.kv, address.hostname, address.namespace, [...namespaceKeys, signingKey]);
    log(`registered signing key ${signingKey.key_id} for namespace ${address.namespace}`);
  }
  return { signingKey, signature: await signDetached(shasums, key.privateKey) };
}
