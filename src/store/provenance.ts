import { ProvenanceRequiredError } from './errors';
import type { BlobStore } from './store';
import { provenancePolicyKey } from './layout';

/**
 * Where provenance lives in R2 (docs/provenance.md):
 *
 *   .provenance-policy/HOST/NS.json     the namespace's "require provenance"
 *                                        flag, its own object (never inside
 *                                        the publisher records); absent = off
 *   .provenance/HOST/KIND/PATH/VERSION/SHA256.json
 *                                        a signed DSSE envelope, content-
 *                                        addressed and created only if absent;
 *                                        written BEFORE the version's record,
 *                                        which names it (ProvenanceRef): the
 *                                        record stays the commit point, so a
 *                                        crash leaves the release and its
 *                                        statement both absent (an unnamed
 *                                        envelope is garbage nobody serves)
 *                                        or both whole.
 */

/** What a version record keeps of its statement. */
export interface ProvenanceRef {
  /** build: SLSA provenance from verified CI claims; publish: a publish attestation (not build provenance). */
  kind: 'build' | 'publish';
  /** R2 key of the envelope. */
  key: string;
  sha256: string;
  size: number;
  /** For the pages (build only): the verified facts the statement states. */
  summary?: BuildSummary;
}

/** A statement signed and ready to be stored: what publishVersion / publishModuleVersion write before their commit. */
export interface PreparedStatement {
  kind: 'build' | 'publish';
  envelope: Uint8Array;
  summary?: BuildSummary;
}

/**
 * How a publish attests: `kind` is known before anything is written (the
 * policy decides on it); `sign` makes the envelope for the release's files
 * once the record is final. kind 'none': no attestation (no
 * SIGNING_KEY_SECRET, or a mirror).
 */
export interface Attester {
  kind: 'build' | 'publish' | 'none';
  /** Why there is no build provenance (for the policy's refusal). */
  why?: string;
  /** `pkg`: the package's full address (HOST/NS/TYPE or HOST/NS/NAME/SYSTEM) and version, stated with the subjects. */
  sign(subjects: { name: string; digest: { sha256: string } }[], pkg: { address: string; version: string }): Promise<PreparedStatement | null>;
}

/** True when `namespace` requires build provenance (one R2 read, strongly consistent). */
export async function provenanceRequired(blobs: BlobStore, hostname: string, namespace: string): Promise<boolean> {
  return (await blobs.head(provenancePolicyKey(hostname, namespace))) !== null;
}

/** Turns the namespace's requirement on or off. */
export async function setProvenanceRequired(blobs: BlobStore, hostname: string, namespace: string, required: boolean, now = new Date()): Promise<void> {
  if (required) {
    await blobs.put(provenancePolicyKey(hostname, namespace), JSON.stringify({ requireProvenance: true, since: now.toISOString() }), {
      httpMetadata: { contentType: 'application/json' },
    });
  } else await blobs.delete(provenancePolicyKey(hostname, namespace));
}

/**
 * The one check every way in runs before writing anything (the publish API's
 * create and commit, publish-provider, publish-module, through
 * publishVersion/publishModuleVersion): throws ProvenanceRequiredError when
 * the namespace requires provenance and `attester` will not state build
 * provenance.
 */
export async function checkProvenancePolicy(blobs: BlobStore, hostname: string, namespace: string, attester: Pick<Attester, 'kind' | 'why'>): Promise<void> {
  if (attester.kind === 'build') return;
  if (!(await provenanceRequired(blobs, hostname, namespace))) return;
  throw new ProvenanceRequiredError(
    `namespace ${namespace} requires build provenance: only a trusted CI publisher may publish into it (${attester.why ?? 'this publish has no verified CI identity'}); ` +
      `publish from the CI job with its OIDC token (npm run publisher -- list --namespace ${namespace}), or turn the requirement off with npm run publisher -- require-provenance --namespace ${namespace} --off`,
  );
}

/**
 * Stores a signed envelope under `prefix` + its SHA-256 (created only if
 * absent: identical bytes are already there) and returns the reference the
 * record keeps. `check` runs before the write (the lease).
 */
export async function storeStatement(blobs: BlobStore, prefix: string, prepared: PreparedStatement, check: () => void = () => {}): Promise<ProvenanceRef> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', prepared.envelope));
  const sha256 = [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
  const key = `${prefix}${sha256}.json`;
  check();
  await blobs.put(key, prepared.envelope, { httpMetadata: { contentType: 'application/json' }, customMetadata: { sha256 }, onlyIf: { etagDoesNotMatch: '*' } });
  return { kind: prepared.kind, key, sha256, size: prepared.envelope.byteLength, ...(prepared.summary ? { summary: prepared.summary } : {}) };
}

/** What the pages and the verifier show of a build: all from verified claims. */
export interface BuildSummary {
  ci: 'github' | 'gitlab';
  /** OWNER/REPO (GitLab: GROUP/PROJECT). */
  repository: string;
  repositoryId: string;
  repositoryUrl: string;
  /** The workflow file (release.yml; GitLab: the CI config path). */
  workflow: string;
  ref: string;
  commit: string;
  commitUrl: string;
  runId: string;
  runUrl: string;
}
