import { InputError, parseShasums, sha256Hex } from '../../src/protocol/index';
import { DsseError, verifyEnvelope, type AttestationPublicJwk } from '../../src/protocol/dsse';
import { SLSA_PROVENANCE_V1, STATEMENT_TYPE, PUBLISH_ATTESTATION_V1, type Statement } from '../../src/provenance/statement';

/**
 * What `npm run verify` checks (scripts/verify.ts), as a consumer would,
 * trusting only the registry's published keys and the bytes it serves:
 *
 *   1. the DSSE envelope of the version verifies with a key of
 *      /v1/provenance/keys (over PAE, keyid == kid);
 *   2. it is an in-toto Statement v1 with SLSA Provenance v1 (a publish
 *      attestation is refused: it is not build provenance);
 *   3. the subjects are exactly the version's files as served (each zip and
 *      SHA256SUMS; the module package), each digest equal to the SHA-256 of
 *      the downloaded bytes, and every zip's line in SHA256SUMS equal too —
 *      a statement of another release, or a tampered file, fails here;
 *   4. the repository and workflow are the expected ones when given.
 * Throws ProvenanceMismatchError (exit 1) naming the first thing that did
 * not match.
 */

export class ProvenanceMismatchError extends InputError {
  constructor(message: string) {
    super(`provenance does not match: ${message}`);
    this.name = 'ProvenanceMismatchError';
  }
}

export interface VerifyOptions {
  /** HOST/NS/TYPE (a provider) or HOST/NS/NAME/SYSTEM (a module). */
  address: string;
  version: string;
  repository?: string;
  workflow?: string;
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

export async function verifyProvenance(options: VerifyOptions): Promise<VerifyResult> {
  const log = options.log ?? (() => {});
  const doFetch = options.fetch ?? fetch;
  const parts = options.address.split('/');
  if (parts.length !== 3 && parts.length !== 4)
    throw new InputError(`"${options.address}" is neither HOST/NAMESPACE/TYPE (a provider) nor HOST/NAMESPACE/NAME/SYSTEM (a module)`);
  const [host, ...path] = parts as [string, ...string[]];
  const base = new URL(options.registry ?? `https://${host}`);
  const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const get = async (url: string, what: string): Promise<Response> => {
    let response: Response;
    try {
      response = await doFetch(new URL(url, base), { headers, redirect: 'follow' });
    } catch (error) {
      // Unreachable, refused, or a certificate Node does not trust (NODE_EXTRA_CA_CERTS names a private CA): a fixable problem, exit 1.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new InputError(`${what}: could not fetch ${new URL(url, base).href}: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
    }
    if (response.status === 404) throw new ProvenanceMismatchError(`${what} is not there (404 at ${url})`);
    if (!response.ok)
      throw new InputError(
        `${what}: ${url} answered ${response.status} ${(await response.text()).slice(0, 200)}${response.status === 401 ? ' (private registry: set EDGE_REGISTRY_TOKEN to a read token)' : ''}`,
      );
    return response;
  };
  const bytes = async (url: string, what: string) => new Uint8Array(await (await get(url, what)).arrayBuffer());

  const module = parts.length === 4;
  const kind = module ? 'modules' : 'providers';
  const keys = ((await (await get('/v1/provenance/keys', "the registry's attestation keys")).json()) as { keys: AttestationPublicJwk[] }).keys;
  const envelope = await (
    await get(
      `/v1/provenance/${kind}/${path.map(encodeURIComponent).join('/')}/${encodeURIComponent(options.version)}`,
      `the provenance of ${options.address} ${options.version}`,
    )
  ).json();
  let verified;
  try {
    verified = await verifyEnvelope(envelope, keys);
  } catch (error) {
    if (error instanceof DsseError) throw new ProvenanceMismatchError(error.message);
    throw error;
  }
  log(`signature: verified with the registry's attestation key ${verified.kid}`);
  let statement: Statement;
  try {
    statement = JSON.parse(new TextDecoder().decode(verified.body)) as Statement;
  } catch {
    throw new ProvenanceMismatchError('the signed payload is not JSON');
  }
  if (statement._type !== STATEMENT_TYPE) throw new ProvenanceMismatchError(`the statement type is ${JSON.stringify(statement._type)}, not ${STATEMENT_TYPE}`);
  if (statement.predicateType === PUBLISH_ATTESTATION_V1) {
    const actor = (statement.predicate as { actor?: { kind?: string } }).actor?.kind ?? 'unknown';
    throw new ProvenanceMismatchError(
      `${options.address} ${options.version} has no build provenance: it was published by ${actor === 'token' ? 'a publish token' : actor === 'operator' ? 'the CLI' : actor === 'ci' ? 'a CI job whose token lacked the claims provenance states' : actor} (the registry signed only a publish attestation)`,
    );
  }
  if (statement.predicateType !== SLSA_PROVENANCE_V1)
    throw new ProvenanceMismatchError(`the predicate type is ${JSON.stringify(statement.predicateType)}, not ${SLSA_PROVENANCE_V1}`);

  // The files as served, by name → SHA-256 of the downloaded bytes.
  const served = new Map<string, string>();
  if (module) {
    const answer = await get(`/v1/modules/${path.join('/')}/${encodeURIComponent(options.version)}/download`, `module ${options.address} ${options.version}`);
    const location = answer.headers.get('x-terraform-get');
    if (!location) throw new InputError(`the module download answered without X-Terraform-Get`);
    const url = new URL(location, answer.url || base);
    served.set(decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf('/') + 1)), sha256Hex(await bytes(url.href, 'the module package')));
  } else {
    const [ns, type] = path as [string, string];
    const versions = (await (await get(`/v1/providers/${ns}/${type}/versions`, `provider ${options.address}`)).json()) as {
      versions: { version: string; platforms: { os: string; arch: string }[] }[];
    };
    const entry = versions.versions.find((v) => v.version === options.version);
    if (!entry) throw new InputError(`${options.address} has no version ${options.version}`);
    let shasumsUrl = '';
    let shasumsName = '';
    for (const p of entry.platforms) {
      const doc = (await (await get(`/v1/providers/${ns}/${type}/${options.version}/download/${p.os}/${p.arch}`, `the ${p.os}_${p.arch} download`)).json()) as {
        filename: string;
        download_url: string;
        shasums_url: string;
      };
      served.set(doc.filename, sha256Hex(await bytes(doc.download_url, doc.filename)));
      shasumsUrl = doc.shasums_url;
      shasumsName = decodeURIComponent(new URL(doc.shasums_url, base).pathname.split('/').at(-1)!);
    }
    const sums = await bytes(shasumsUrl, 'SHA256SUMS');
    served.set(shasumsName, sha256Hex(sums));
    // SHA256SUMS as served must list each zip with the digest of its bytes.
    const lines = new Map(parseShasums(new TextDecoder().decode(sums)).map((e) => [e.filename, e.sha256Hex]));
    for (const [name, digest] of served) {
      if (name !== shasumsName && lines.get(name) !== digest)
        throw new ProvenanceMismatchError(`${shasumsName} lists ${name} as ${lines.get(name) ?? 'nothing'}, its bytes hash to ${digest}`);
    }
  }

  const subjects = Array.isArray(statement.subject) ? statement.subject : [];
  const named = new Map(subjects.map((s) => [s?.name, s?.digest?.sha256]));
  for (const [name, digest] of served) {
    const stated = named.get(name);
    if (stated === undefined) throw new ProvenanceMismatchError(`${name} is served but is not a subject of the statement (a statement of another release?)`);
    if (stated !== digest) throw new ProvenanceMismatchError(`${name}: the statement says sha256 ${stated}, the served bytes hash to ${digest}`);
  }
  for (const s of subjects)
    if (!served.has(s.name)) throw new ProvenanceMismatchError(`the statement names ${s.name}, which ${options.address} ${options.version} does not serve`);
  log(`subjects: ${served.size} files, each digest equal to the served bytes${module ? '' : ' and to SHA256SUMS'}`);

  const facts = buildFacts(statement);
  if (options.repository && facts.repository.toLowerCase() !== options.repository.toLowerCase()) {
    throw new ProvenanceMismatchError(`built from repository ${facts.repository} (id ${facts.repositoryId}), expected ${options.repository}`);
  }
  if (options.workflow) {
    const want = options.workflow.includes('/') ? options.workflow : `/${options.workflow}`;
    if (!`/${facts.workflow}`.endsWith(want)) throw new ProvenanceMismatchError(`built by workflow ${facts.workflow}, expected ${options.workflow}`);
  }
  return {
    address: options.address,
    version: options.version,
    keyid: verified.kid,
    ...facts,
    subjects: subjects.map((s) => ({ name: s.name, sha256: s.digest.sha256 })),
  };
}

/** Repository, workflow, ref, commit and run as the statement states them (GitHub's or our GitLab build type). */
function buildFacts(statement: Statement): Omit<VerifyResult, 'address' | 'version' | 'keyid' | 'subjects'> {
  const p = statement.predicate as {
    buildDefinition?: {
      externalParameters?: {
        workflow?: { repository?: string; path?: string; ref?: string };
        project?: { path?: string; id?: string };
        config?: { path?: string };
        ref?: string;
      };
      internalParameters?: { github?: { repository_id?: string } };
      resolvedDependencies?: { uri: string; digest: { gitCommit?: string } }[];
    };
    runDetails?: { metadata?: { invocationId?: string } };
  };
  const ext = p.buildDefinition?.externalParameters ?? {};
  const int = p.buildDefinition?.internalParameters ?? {};
  const dep = p.buildDefinition?.resolvedDependencies?.[0];
  const github = ext.workflow !== undefined;
  const repository = github ? String(ext.workflow?.repository ?? '').replace(/^https?:\/\/[^/]+\//, '') : String(ext.project?.path ?? '');
  return {
    repository,
    repositoryId: String(github ? (int.github?.repository_id ?? '') : (ext.project?.id ?? '')),
    workflow: String(github ? (ext.workflow?.path ?? '') : (ext.config?.path ?? '')),
    ref: String(github ? (ext.workflow?.ref ?? '') : (ext.ref ?? '')),
    commit: String(dep?.digest?.gitCommit ?? ''),
    invocation: String(p.runDetails?.metadata?.invocationId ?? ''),
  };
}
