import { InputError } from '../../src/protocol/index';
import { DsseError, verifyEnvelope, type AttestationPublicJwk } from '../../src/protocol/dsse';
import { ProvenanceMismatchError, registryReader, servedModuleFiles, servedProviderFiles, type RegistryReader } from './provenance-served';
import { SLSA_PROVENANCE_V1, STATEMENT_TYPE, PUBLISH_ATTESTATION_V1, type Statement } from '../../src/provenance/statement';

/**
 * What `npm run verify` checks (scripts/verify.ts), as a consumer would,
 * trusting only the registry's published keys and the bytes it serves:
 *
 *   1. the DSSE envelope of the version verifies with a key of
 *      /v1/provenance/keys (over PAE, keyid == kid);
 *   2. it is an in-toto Statement v1 with SLSA Provenance v1 (a publish
 *      attestation is refused: it is not build provenance);
 *   3. it names the package asked about: its full address (HOST/NS/TYPE or
 *      HOST/NS/NAME/SYSTEM; host and namespace compared without case) and
 *      version — a validly signed statement of another namespace's package
 *      with the same file names fails here. A statement without the package
 *      (signed before statements named it) is refused unless
 *      `acceptUnbound`: then it is checked by its files alone, with a warning;
 *   4. the subjects are exactly the version's files as served (each zip and
 *      SHA256SUMS; the module package), each digest equal to the SHA-256 of
 *      the downloaded bytes, and every zip's line in SHA256SUMS equal too —
 *      a statement of another release, or a tampered file, fails here;
 *   5. the repository is the one the registry's publisher rule is pinned to
 *      by id (when the rule states an id, the token's repository id must be
 *      it), and the repository (name, and id when given) and workflow are the
 *      expected ones.
 * Throws ProvenanceMismatchError (exit 1) naming the first thing that did
 * not match.
 */

export { ProvenanceMismatchError };

export interface VerifyOptions {
  /** HOST/NS/TYPE (a provider) or HOST/NS/NAME/SYSTEM (a module). */
  address: string;
  version: string;
  repository?: string;
  /** The repository's numeric id (GitHub repository_id, GitLab project_id): a repository renamed or re-created under the name has another. */
  repositoryId?: string;
  workflow?: string;
  /** Accept a statement that names no package (signed before statements did), checked by its files alone. */
  acceptUnbound?: boolean;
  /** The registry's URL when it is not served at https://HOST. */
  registry?: string;
  /** A read token (private mode). */
  token?: string;
  fetch?: typeof fetch;
  log?: (line: string) => void;
}

export interface VerifyResult {
  address: string;
  version: string;
  keyid: string;
  repository: string;
  repositoryId: string;
  workflow: string;
  ref: string;
  commit: string;
  invocation: string;
  subjects: { name: string; sha256: string }[];
}

/**
 * Runs the checks of the file comment, in that order, against the registry of
 * `options.address` (or `options.registry`). Returns the verified facts;
 * throws ProvenanceMismatchError naming the first check that failed, or
 * InputError when the address is malformed or the registry cannot be read.
 */
export async function verifyProvenance(options: VerifyOptions): Promise<VerifyResult> {
  const log = options.log ?? (() => {});
  const { path, module } = parseAddress(options.address);
  const registry = registryReader(options);
  const { kid, statement } = await verifiedStatement(registry, module ? 'modules' : 'providers', path, options);
  log(`signature: verified with the registry's attestation key ${kid}`);
  checkIsBuildProvenance(statement, options);
  if (checkPackage(statement, options)) log(`package: the statement names ${options.address} ${options.version}`);
  else log(`warning: the statement names no package (signed before statements did); accepted by its files alone (--accept-unbound)`);
  const served = module ? await servedModuleFiles(registry, path, options) : await servedProviderFiles(registry, path, options);
  checkSubjects(statement, served, options);
  log(`subjects: ${served.size} files, each digest equal to the served bytes${module ? '' : ' and to SHA256SUMS'}`);
  const { pinnedRepositoryId, ...facts } = buildFacts(statement);
  checkExpectedBuilder({ ...facts, pinnedRepositoryId }, options);
  return {
    address: options.address,
    version: options.version,
    keyid: kid,
    ...facts,
    subjects: statement.subject.map((s) => ({ name: s.name, sha256: s.digest.sha256 })),
  };
}

/** HOST/NS/TYPE or HOST/NS/NAME/SYSTEM: the path after the host, and whether it names a module; InputError otherwise. */
function parseAddress(address: string): { path: string[]; module: boolean } {
  const parts = address.split('/');
  if (parts.length !== 3 && parts.length !== 4)
    throw new InputError(`"${address}" is neither HOST/NAMESPACE/TYPE (a provider) nor HOST/NAMESPACE/NAME/SYSTEM (a module)`);
  return { path: parts.slice(1), module: parts.length === 4 };
}

/** Check 1: the version's DSSE envelope verifies with a key of /v1/provenance/keys; its payload is JSON. */
async function verifiedStatement(
  registry: RegistryReader,
  kind: 'providers' | 'modules',
  path: string[],
  { address, version }: VerifyOptions,
): Promise<{ kid: string; statement: Statement }> {
  const keys = ((await (await registry.get('/v1/provenance/keys', "the registry's attestation keys")).json()) as { keys: AttestationPublicJwk[] }).keys;
  const envelope = await (
    await registry.get(
      `/v1/provenance/${kind}/${path.map(encodeURIComponent).join('/')}/${encodeURIComponent(version)}`,
      `the provenance of ${address} ${version}`,
    )
  ).json();
  let verified: Awaited<ReturnType<typeof verifyEnvelope>>;
  try {
    verified = await verifyEnvelope(envelope, keys);
  } catch (error) {
    if (error instanceof DsseError) throw new ProvenanceMismatchError(error.message);
    throw error;
  }
  let statement: Statement;
  try {
    statement = JSON.parse(new TextDecoder().decode(verified.body)) as Statement;
  } catch {
    throw new ProvenanceMismatchError('the signed payload is not JSON');
  }
  if (!Array.isArray(statement.subject)) statement.subject = [];
  return { kid: verified.kid, statement };
}

/**
 * Check 3: the statement names this package (address and version). Returns
 * false for an unbound statement accepted with `acceptUnbound`; throws
 * ProvenanceMismatchError for another package, or an unbound one otherwise.
 */
function checkPackage(statement: Statement, options: VerifyOptions): boolean {
  const stated = statedPackage(statement);
  if (stated === null) {
    if (options.acceptUnbound) return false;
    throw new ProvenanceMismatchError(
      `the statement names no package address (signed by a registry before statements named their package), so it could be another package's with the same file names; publish the version again from CI to get a bound statement, or pass --accept-unbound to check it by its files alone`,
    );
  }
  const canonical = (address: string) => {
    const [host = '', namespace = '', ...rest] = address.split('/');
    return [host.toLowerCase(), namespace.toLowerCase(), ...rest].join('/');
  };
  if (typeof stated.address !== 'string' || canonical(stated.address) !== canonical(options.address) || stated.version !== options.version) {
    throw new ProvenanceMismatchError(
      `the statement is about ${String(stated.address)} ${String(stated.version)}, not ${options.address} ${options.version} (a statement of another package presented for this one)`,
    );
  }
  return true;
}

/** The package a statement names (build provenance: internalParameters.registry.package; publish attestation: predicate.package), or null. */
function statedPackage(statement: Statement): { address?: unknown; version?: unknown } | null {
  const p = statement.predicate as {
    package?: { address?: unknown; version?: unknown };
    buildDefinition?: { internalParameters?: { registry?: { package?: { address?: unknown; version?: unknown } } } };
  };
  const stated = statement.predicateType === SLSA_PROVENANCE_V1 ? p.buildDefinition?.internalParameters?.registry?.package : p.package;
  return typeof stated === 'object' && stated !== null ? stated : null;
}

/** Check 2: an in-toto Statement v1 with SLSA Provenance v1; a publish attestation says who published instead. */
function checkIsBuildProvenance(statement: Statement, options: VerifyOptions): void {
  if (statement._type !== STATEMENT_TYPE) throw new ProvenanceMismatchError(`the statement type is ${JSON.stringify(statement._type)}, not ${STATEMENT_TYPE}`);
  if (statement.predicateType === PUBLISH_ATTESTATION_V1) {
    const actor = (statement.predicate as { actor?: { kind?: string } }).actor?.kind ?? 'unknown';
    throw new ProvenanceMismatchError(
      `${options.address} ${options.version} has no build provenance: it was published by ${actor === 'token' ? 'a publish token' : actor === 'operator' ? 'the CLI' : actor === 'ci' ? 'a CI job whose token lacked the claims provenance states' : actor} (the registry signed only a publish attestation)`,
    );
  }
  if (statement.predicateType !== SLSA_PROVENANCE_V1)
    throw new ProvenanceMismatchError(`the predicate type is ${JSON.stringify(statement.predicateType)}, not ${SLSA_PROVENANCE_V1}`);
}

/** Check 4: the subjects are exactly the served files, each with the digest of its served bytes. */
function checkSubjects(statement: Statement, served: ReadonlyMap<string, string>, options: VerifyOptions): void {
  const named = new Map(statement.subject.map((s) => [s?.name, s?.digest?.sha256]));
  for (const [name, digest] of served) {
    const stated = named.get(name);
    if (stated === undefined) throw new ProvenanceMismatchError(`${name} is served but is not a subject of the statement (a statement of another release?)`);
    if (stated !== digest) throw new ProvenanceMismatchError(`${name}: the statement says sha256 ${stated}, the served bytes hash to ${digest}`);
  }
  for (const s of statement.subject)
    if (!served.has(s.name)) throw new ProvenanceMismatchError(`the statement names ${s.name}, which ${options.address} ${options.version} does not serve`);
}

/** Check 5: the repository is the one the rule is pinned to by id; repository (name, id) and workflow are the expected ones, where given. */
function checkExpectedBuilder(facts: ReturnType<typeof buildFacts>, options: VerifyOptions): void {
  if (facts.pinnedRepositoryId !== null && facts.pinnedRepositoryId !== facts.repositoryId) {
    throw new ProvenanceMismatchError(
      `built from repository ${facts.repository} with id ${facts.repositoryId}, but the registry's publisher rule is pinned to repository id ${facts.pinnedRepositoryId}`,
    );
  }
  if (options.repository && facts.repository.toLowerCase() !== options.repository.toLowerCase()) {
    throw new ProvenanceMismatchError(`built from repository ${facts.repository} (id ${facts.repositoryId}), expected ${options.repository}`);
  }
  if (options.repositoryId !== undefined && facts.repositoryId !== options.repositoryId) {
    throw new ProvenanceMismatchError(
      `built from repository ${facts.repository} with id ${facts.repositoryId}, expected id ${options.repositoryId} (a repository renamed or re-created under that name has another id)`,
    );
  }
  if (options.workflow) {
    const want = options.workflow.includes('/') ? options.workflow : `/${options.workflow}`;
    if (!`/${facts.workflow}`.endsWith(want)) throw new ProvenanceMismatchError(`built by workflow ${facts.workflow}, expected ${options.workflow}`);
  }
}

/**
 * Repository, workflow, ref, commit and run as the statement states them (GitHub's or our GitLab build type),
 * and the repository id the registry's publisher rule was pinned to (null when the rule states none).
 */
function buildFacts(statement: Statement): Omit<VerifyResult, 'address' | 'version' | 'keyid' | 'subjects'> & { pinnedRepositoryId: string | null } {
  const p = statement.predicate as {
    buildDefinition?: {
      externalParameters?: {
        workflow?: { repository?: string; path?: string; ref?: string };
        project?: { path?: string; id?: string };
        config?: { path?: string };
        ref?: string;
      };
      internalParameters?: {
        github?: { repository_id?: string };
        registry?: { publisher?: { repository_id?: string | null; project_id?: string | null } };
      };
      resolvedDependencies?: { uri: string; digest: { gitCommit?: string } }[];
    };
    runDetails?: { metadata?: { invocationId?: string } };
  };
  const ext = p.buildDefinition?.externalParameters ?? {};
  const int = p.buildDefinition?.internalParameters ?? {};
  const dep = p.buildDefinition?.resolvedDependencies?.[0];
  const github = ext.workflow !== undefined;
  const repository = github ? String(ext.workflow?.repository ?? '').replace(/^https?:\/\/[^/]+\//, '') : String(ext.project?.path ?? '');
  const pinned = github ? int.registry?.publisher?.repository_id : int.registry?.publisher?.project_id;
  return {
    pinnedRepositoryId: pinned === undefined || pinned === null ? null : String(pinned),
    repository,
    repositoryId: String(github ? (int.github?.repository_id ?? '') : (ext.project?.id ?? '')),
    workflow: String(github ? (ext.workflow?.path ?? '') : (ext.config?.path ?? '')),
    ref: String(github ? (ext.workflow?.ref ?? '') : (ext.ref ?? '')),
    commit: String(dep?.digest?.gitCommit ?? ''),
    invocation: String(p.runDetails?.metadata?.invocationId ?? ''),
  };
}
