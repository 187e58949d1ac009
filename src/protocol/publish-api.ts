import type { ModuleInterface, ModuleSubmodule } from './module-docs-shape';
import type { ModuleArchiveFormat } from './modules-v1';
import type { ProviderDocs } from './provider-docs-shape';

/**
 * The publish API's wire shapes (docs/publish-api.md), one definition for the
 * Worker that answers them (src/routes/publish/) and the CLI that sends them
 * (scripts/lib/registry-api.ts, scripts/lib/provider/publish-registry.ts,
 * scripts/lib/module/publish-registry.ts).
 */

/** One declared file of a provider manifest. */
export interface ManifestFile {
  filename: string;
  size: number;
  /** Lower-case hex SHA-256. */
  sha256: string;
  /** An archive's Go dirhash, "h1:…" (optional; the server computes its own and compares). */
  h1?: string;
  /**
   * The file's bytes in base64 (optional; not for an archive: SHA256SUMS, its .sig, goreleaser's manifest,
   * each at most 64 KiB): sent with the manifest, the file needs no upload (the session does not list it). A
   * server that does not know the field lists the file as usual, so a client uploads whatever the session lists.
   */
  content?: string;
}

/** The body of `POST /v1/publish/providers/:namespace/:type/:version`. */
export interface ProviderManifestBody {
  /** The plugin protocols (default ["5.0"]); required when the manifest file is among `files`. */
  protocols?: string[];
  /** The archives, SHA256SUMS, optionally its .sig and goreleaser's manifest. */
  files: ManifestFile[];
  dry_run?: boolean;
  docs?: ProviderDocs;
}

/** One file of an upload session: PUT it to `url`, in `parts` parts of `part_size` bytes when parts > 1. */
export interface SessionFile {
  filename: string;
  size: number;
  url: string;
  parts: number;
}

/** A started upload session (201). */
export interface UploadSessionBody {
  upload: string;
  expires: string;
  part_size: number;
  /** The files to upload (in the manifest's order). */
  files: SessionFile[];
  /** The files whose bytes came with the manifest (ManifestFile's `content`): no upload. Absent when none (or from a server that takes none). */
  with_manifest?: string[];
  commit_url: string;
}

/** One published platform: the stored package record (src/store/types.ts PackageRecord is this type). */
export interface PublishedPlatform {
  os: string;
  arch: string;
  filename: string;
  /** Hex SHA-256 of the zip (the registry's `shasum`; `zh:` hash). */
  shasum: string;
  /** Go dirhash Hash1 of the zip's contents, "h1:…". */
  h1: string;
  /** Size of the zip in bytes. */
  size: number;
}

/** A provider publish's result: the commit's answer, a start's 200, and what `publish-provider --json` prints. */
export interface ProviderPublishResult {
  /** hostname/namespace/type */
  address: string;
  version: string;
  protocols: string[];
  platforms: PublishedPlatform[];
  key_id: string;
  /**
   * published: written now; unchanged: already published with these bytes and
   * verified whole; repaired: already published, missing or damaged parts
   * rewritten; dry-run: nothing written.
   */
  status: PublishStatus;
}

/** What a publish did: written now, already there whole, already there with missing parts rewritten, or nothing written (dry run). */
export type PublishStatus = 'published' | 'unchanged' | 'repaired' | 'dry-run';

/** A module package's documentation as a client sends it: the root's interface and each submodule's (no README: that travels as `readme`). */
export interface ModuleDocsBody extends ModuleInterface {
  submodules: ModuleSubmodule[];
}

/**
 * The body of `POST /v1/publish/modules/:namespace/:name/:system/:version`
 * (checked by src/routes/publish/module-manifest.ts). The README travels as
 * Markdown text, rendered by the Worker; never as HTML.
 */
export interface ModuleManifestBody {
  format: ModuleArchiveFormat;
  /** The package's size in bytes. */
  size: number;
  /** Lower-case hex SHA-256 of the package. */
  sha256: string;
  docs: ModuleDocsBody;
  readme?: string | null;
  dry_run?: boolean;
}

/** A module publish's result: the commit's answer and a start's 200 (the session is UploadSessionBody, one file). */
export interface ModulePublishResult {
  /** hostname/namespace/name/system */
  address: string;
  version: string;
  filename: string;
  format: ModuleArchiveFormat;
  /** Lower-case hex SHA-256 of the package. */
  sha256: string;
  size: number;
  status: PublishStatus;
}
