import { sha256Hex } from '../../../src/protocol/hashes';
import { generatedShasums } from '../../../src/protocol/provider-release';
import { manifestFilename, shasumsFilename, shasumsSignatureFilename } from '../../../src/protocol/release-files';
import { explicitPrivateKey } from '../keys/keyring';
import { RegistryClient, type UploadableFile } from '../registry-api';
import type { PublishResult } from './result';
import type { ProviderManifestBody } from '../../../src/protocol/publish-api';
import type { ReleasePlan } from './release';
import { signDetached } from './sign';
import type { ProviderDocs } from '../../../src/protocol/provider-docs-shape';

/**
 * `publish-provider … --registry URL`: publishes a validated release plan
 * through the registry's publish API — no Cloudflare credentials, only a
 * publish token or a CI job's OIDC identity. SHA256SUMS is the supplied one
 * or generated (deterministic); the signature is the supplied one, or made
 * here with --key-file / EDGE_REGISTRY_SIGNING_KEY, or left to the registry,
 * which signs with the namespace's key it holds. The server checks
 * everything again (zips, h1, SUMS, signature) before it commits; `dryRun`
 * asks it to validate and write nothing.
 */
export async function publishToRegistry(
  plan: ReleasePlan,
  namespace: string,
  options: { registry: string; keyFile?: string; dryRun?: boolean; docs?: ProviderDocs },
  log: (line: string) => void,
  env: NodeJS.ProcessEnv,
): Promise<PublishResult> {
  const client = await RegistryClient.open(options.registry, env, log);
  const sums = releaseShasums(plan);
  let signature = plan.signature?.bytes ?? null;
  if (!signature) {
    const key = await explicitPrivateKey({ keyFile: options.keyFile, env });
    if (key) {
      signature = await signDetached(sums, key.privateKey);
      log(`signed SHA256SUMS with key ${key.publicKey.key_id} (${key.source})`);
    } else {
      log('no signing key here: the registry signs SHA256SUMS with the key it holds for the namespace');
    }
  }
  const name = `${namespace}/${plan.type} ${plan.version}`;
  const sent = await sendRelease(client, plan, namespace, { signature, dryRun: options.dryRun, docs: options.docs });
  if ('result' in sent) {
    const { status } = sent.result;
    log(
      status === 'dry-run'
        ? `dry run: the registry accepts ${name}; nothing was written`
        : status === 'repaired'
          ? `${name} was already published; the registry completed what an interrupted publish left`
          : `${name} is already published with these bytes; nothing to upload`,
    );
    return sent.result;
  }
  const result = await sent.upload();
  log(
    result.status === 'published'
      ? `published ${name} (${result.platforms.length} platforms, signed by ${result.key_id})`
      : `${name} was already published; nothing rewritten`,
  );
  return result;
}

/** The release's SHA256SUMS: the supplied one, else one sorted line per zip (deterministic: a re-run makes the same bytes). */
export function releaseShasums(plan: ReleasePlan): Uint8Array {
  return (
    plan.shasums?.bytes ??
    generatedShasums(plan.archives.map((a) => ({ ...a.platform, filename: a.filename, shasum: a.digest.sha256Hex, h1: a.digest.h1, size: a.digest.size })))
  );
}

/**
 * Starts the publish of `plan` through `client` (every way in: --registry, and the local publish): the
 * manifest lists the archives, SHA256SUMS, the signature when there is one (`signature`; or only its
 * size and digest, `declared`, for a dry run whose key does not exist yet) and the manifest the
 * protocols came from, the bytes of each of those small files with it (`content`: no upload of their own). Resolves with the server's result when nothing is to be uploaded (dry run,
 * unchanged, repaired), else with `upload`, which sends the files and commits. Throws the client's errors.
 */
export async function sendRelease(
  client: RegistryClient,
  plan: ReleasePlan,
  namespace: string,
  options: { signature: Uint8Array | null; declaredSignature?: { size: number; sha256: string }; dryRun?: boolean; docs?: ProviderDocs },
): Promise<{ result: PublishResult } | { upload: () => Promise<PublishResult> }> {
  const sums = releaseShasums(plan);
  const { signature } = options;
  const files: (UploadableFile & { sha256: string; h1?: string })[] = [
    ...plan.archives.map((a) => ({ filename: a.filename, size: a.digest.size, path: a.path, sha256: a.digest.sha256Hex, h1: a.digest.h1 })),
    { filename: shasumsFilename(plan.type, plan.version), size: sums.byteLength, bytes: sums, sha256: sha256Hex(sums) },
    ...(signature
      ? [{ filename: shasumsSignatureFilename(plan.type, plan.version), size: signature.byteLength, bytes: signature, sha256: sha256Hex(signature) }]
      : options.declaredSignature
        ? [{ filename: shasumsSignatureFilename(plan.type, plan.version), ...options.declaredSignature }]
        : []),
    // The manifest the protocols came from, under the name SHA256SUMS lists it by: the server checks both against it.
    ...(plan.manifest
      ? [
          {
            filename: manifestFilename(plan.type, plan.version),
            size: plan.manifest.bytes.byteLength,
            bytes: plan.manifest.bytes,
            sha256: sha256Hex(plan.manifest.bytes),
          },
        ]
      : []),
  ];
  const manifest: ProviderManifestBody = {
    protocols: plan.protocols,
    // The small files (SHA256SUMS, its signature, the manifest) travel with the manifest: no upload of their own.
    files: files.map((f) => ({
      filename: f.filename,
      size: f.size,
      sha256: f.sha256,
      ...(f.h1 ? { h1: f.h1 } : {}),
      ...(f.bytes ? { content: Buffer.from(f.bytes).toString('base64') } : {}),
    })),
    ...(options.dryRun ? { dry_run: true } : {}),
    ...(options.docs ? { docs: options.docs } : {}),
  };
  const started = await client.start<PublishResult>(`/v1/publish/providers/${namespace}/${plan.type}/${plan.version}`, manifest);
  if ('result' in started) return started;
  return { upload: () => client.uploadAndCommit<PublishResult>(started.session, files) };
}
