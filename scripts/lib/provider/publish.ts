import { formatAddress, parseHostname, parseProviderName, providerAddress, sha256Hex, type ProviderAddress } from '../../../src/protocol/index';
import { providerLeaseName } from '../../../src/store/layout';
import { readVersionRecord } from '../../../src/store/providers/version-records';
import { readSigningKeys, writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { ProviderDocs } from '../../../src/protocol/provider-docs-shape';
import { readRegistryConfig, type RegistryConfig } from '../config';
import type { StoreHandle } from '../stores/handle';
import { remotePublishRefusal, startLocalRegistry, withLocalPublish } from '../stores/local-publish';
import type { RegistryClient } from '../registry-api';
import { readRelease, type ReleasePlan } from './release';
import { chooseSigner, signAhead, signDetached } from './sign';
import { readDocsFile } from './docs/index';
import { publishToRegistry, releaseShasums, sendRelease } from './publish-registry';
import type { PublishResult } from './result';
import { timing } from '../timing';

/**
 * publishRelease: the function behind `npm run publish-provider`, for the
 * CLI and for other scripts (demo, tests, benchmarks).
 *
 * The files are validated first (names, version, platforms, zips and their
 * executables, SHA256SUMS lines, the manifest: src/protocol/provider-release.ts,
 * the pipeline the API runs again). Then every way publishes through the
 * Worker's publish API, the one writer of releases: `registry` names a
 * deployed registry (a publish token or a CI identity); without it the
 * registry Worker is served in-process on the local state
 * (stores/local-publish.ts) and the CLI signs SHA256SUMS with the
 * namespace's key (--key-file, EDGE_REGISTRY_SIGNING_KEY, else
 * .keys/HOST/NS.asc, generated and registered when the namespace has none).
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
  /** Refused: releases reach a deployed registry through its publish API (`registry`) only. */
  remote?: boolean;
  /** wrangler environment (e.g. "production"). */
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
  /** Publish through this registry's publish API (URL): EDGE_REGISTRY_TOKEN or a CI OIDC token. */
  registry?: string;
  /** Human-readable lines (the CLI writes them to stderr). */
  log?: (line: string) => void;
  /** Environment for keys and credentials (default process.env). */
  processEnv?: NodeJS.ProcessEnv;
  /** An already-open local store (callers publishing many releases; opened with its registry to be used); not closed here. */
  store?: StoreHandle;
  /** An already-read config (with `store`). */
  config?: RegistryConfig;
}

// What `--json` prints lives in ./result.ts (publish-registry.ts shares it).
export type { PublishedPlatform, PublishResult } from './result';

/**
 * Validates and publishes one provider version. Resolves with the result
 * (also for an identical re-run: status "unchanged"; "repaired" when the
 * registry completed an interrupted publish). Throws InputError for anything
 * the caller can fix — bad files, a version already published with other
 * bytes, another publish holding the provider, the registry's refusals (all
 * exit 1 in the CLI) — other errors for infrastructure failures; nothing is
 * written when validation fails.
 */
export async function publishRelease(options: PublishOptions): Promise<PublishResult> {
  const log = options.log ?? (() => {});
  const env = options.processEnv ?? process.env;
  const namespace = parseProviderName(options.namespace, 'namespace');
  if (options.remote) throw remotePublishRefusal('publish-provider', `${namespace}/${options.type ?? 'TYPE'}`);
  const config =
    options.registry === undefined
      ? (options.config ?? (await readRegistryConfig({ configPath: options.configPath, env: options.env, persistTo: options.persistTo })))
      : null;
  const hostname = config ? (options.hostname ? parseHostname(options.hostname) : config.hostname) : '';
  // The local registry starts while the release is read (stores/local-publish.ts), and openpgp loads meanwhile
  // (the local publish signs; loading it takes ~0.1 s of a core that is otherwise waiting).
  const registry = config ? startLocalRegistry(config, hostname, options.store, true) : null;
  if (registry) import('openpgp').catch(() => undefined);
  let plan: ReleasePlan;
  try {
    plan = await readRelease({ paths: options.paths ?? [], binaries: options.binaries, type: options.type, version: options.version, log });
  } catch (error) {
    await registry?.close();
    throw error;
  }
  timing('release validated');
  try {
    for (const note of plan.notes) log(`note: ${note}`);
    // --docs: checked and normalised here, sent in the manifest, checked again by the server.
    const docs = options.docs ? readDocsFile(options.docs, namespace, plan.type) : undefined;
    if (!config)
      return await publishToRegistry(plan, namespace, { registry: options.registry!, keyFile: options.keyFile, dryRun: options.dryRun, docs }, log, env);
    const address = providerAddress(hostname, namespace, plan.type);
    // Signed while the runtime starts (used only when the key chosen below is that same key).
    const signedAhead = plan.signature || options.dryRun ? null : signAhead(releaseShasums(plan), address, config, options, env);
    return await withLocalPublish(
      { registry: registry!.get(), pkg: `${namespace}/${plan.type}`, command: 'publish-provider', lease: providerLeaseName(address), env, log },
      ({ store, client }) => publishLocally({ plan, address, store, client, config, options, log, env, docs, signedAhead }),
    );
  } finally {
    plan.cleanup();
    await registry?.close(); // when the publish stopped before using it (withLocalPublish closes it otherwise)
  }
}

/** What a manifest declares for a signature not made yet (a dry run's): the Worker checks only that one is sent. */
const UNSIGNED_YET = { size: 1, sha256: sha256Hex(new Uint8Array(1)) };

/** What publishLocally works from: the validated release, where it goes, and how the run was asked for. */
interface LocalContext {
  plan: ReleasePlan;
  address: ProviderAddress;
  store: StoreHandle;
  /** The local registry's client, once its publish token exists. */
  client: Promise<RegistryClient>;
  config: RegistryConfig;
  options: PublishOptions;
  log: (line: string) => void;
  env: NodeJS.ProcessEnv;
  docs: ProviderDocs | undefined;
  /** SHA256SUMS signed ahead (signAhead), or null. */
  signedAhead: Promise<{ keyId: string; signature: Uint8Array } | null> | null;
}

/**
 * The local publish through the Worker: the signature (supplied, or made here with the namespace's
 * key, registered first when new: an operator's write, as `npm run keys` makes), then the publish API.
 * A version already stored needs no signature: the registry verifies it and completes what an
 * interrupted publish left. Prints the lines the local publish always printed.
 */
async function publishLocally(ctx: LocalContext): Promise<PublishResult> {
  const { plan, address, store, client, config, options, log, env, docs, signedAhead } = ctx;
  const name = `${formatAddress(address)} ${plan.version}`;
  const [existing, namespaceKeys] = await Promise.all([
    readVersionRecord(store, address, plan.version),
    readSigningKeys(store.kv, address.hostname, address.namespace),
  ]);
  let signature = plan.signature?.bytes ?? null;
  let declaredSignature: { size: number; sha256: string } | undefined;
  let pending: string | undefined;
  let signerKeyId: string | undefined;
  if (!signature && !existing) {
    const signer = await chooseSigner(address, config, namespaceKeys, { keyFile: options.keyFile, keysDir: options.keysDir }, env, log);
    const writesKey = signer.pending !== undefined || !namespaceKeys.some((k) => k.key_id === signer.keyId);
    if (options.dryRun && signer.pending) {
      // No key yet (a dry run creates none): the manifest declares a signature the commit would carry.
      pending = signer.pending;
      signerKeyId = signer.keyId;
      declaredSignature = UNSIGNED_YET;
    } else {
      // A key to generate or register is written only once the Worker has accepted the release (its
      // policy, the version's state, the names): asked with a dry run first; a refusal throws here.
      if (writesKey && !options.dryRun)
        await sendRelease(await client, plan, address.namespace, { signature: null, declaredSignature: UNSIGNED_YET, dryRun: true, docs });
      const key = await signer.load();
      if (!namespaceKeys.some((k) => k.key_id === key.publicKey.key_id) && !options.dryRun) {
        await writeSigningKeys(store.kv, address.hostname, address.namespace, [...namespaceKeys, key.publicKey]);
        log(`registered signing key ${key.publicKey.key_id} for namespace ${address.namespace}`);
      }
      const ahead = await signedAhead;
      signature = ahead?.keyId === key.publicKey.key_id ? ahead.signature : await signDetached(releaseShasums(plan), key.privateKey);
      signerKeyId = key.publicKey.key_id;
    }
  }
  timing('signed');
  if (!options.dryRun && !existing) log(`publishing ${name} to ${store.description}`);
  if (docs && !options.dryRun) log(`docs: ${docs.resources.length} resources, ${docs.dataSources.length} data sources, sent with the release`);
  const sent = await sendRelease(await client, plan, address.namespace, { signature, declaredSignature, dryRun: options.dryRun, docs });
  const answered = 'result' in sent ? sent.result : await sent.upload();
  // A dry run's answer knows no key (nothing was signed there): the one that signs, or signed.
  const result = answered.status === 'dry-run' ? { ...answered, key_id: existing?.signingKey.key_id ?? signerKeyId ?? answered.key_id } : answered;
  if (plan.signature && result.status !== 'dry-run' && !existing)
    log(`${plan.signature.path}: signature verified with key ${result.key_id}; publishing it as is`);
  switch (result.status) {
    case 'dry-run':
      if (existing) {
        log(`dry run: ${name} is already published with these bytes; a run would verify it and complete anything missing`);
        break;
      }
      log(`dry run: would publish ${name} to ${store.description}:`);
      for (const p of result.platforms) log(`  ${p.filename}  ${(p.size / 1e6).toFixed(1)} MB  zh:${p.shasum}  ${p.h1}`);
      log(`  protocols ${JSON.stringify(result.protocols)}`);
      if (pending) log(`  ${pending}`);
      break;
    case 'published':
      // What the Worker's commit wrote beside the release files (src/store/providers/lists.ts), said as the CLI always said it.
      log(`  documents: the version lists (registry, mirror) and the provider page of ${formatAddress(address)}`);
      log(`published ${name} (${result.platforms.length} platforms, signed by ${result.key_id})`);
      break;
    case 'repaired':
      log(`${name} was already published; the registry completed what an interrupted publish left`);
      break;
    default:
      log(`${name} is already published with these bytes; verified, nothing to write`);
  }
  return result;
}
