import type { Actor } from '../store/audit/actor';
import type { VerifiedCiToken } from '../access/ci-token';
import { currentAttestationKey } from '../store/keys/attestation-keys';
import type { Attester, PreparedStatement } from '../store/provenance';
import type { BlobStore } from '../store/store';
import { signEnvelope } from '../protocol/dsse';
import { buildProvenance, IncompleteClaimsError, publishAttestation, type PackageRef, type Subject } from './statement';

/**
 * The attester of one publish (see src/store/provenance.ts): build
 * provenance when the actor is a trusted CI job whose token verified with
 * every claim the statement needs (`ci` is verifyCiToken's result — nothing
 * the uploader sent), else a publish attestation naming the actor kind;
 * either names the package (`sign`'s `pkg`: full address and version).
 * Signed with the registry's current attestation key (made on first use);
 * kind 'none' when the registry has no SIGNING_KEY_SECRET to seal one.
 */
export function attesterFor(
  actor: Actor,
  ci: VerifiedCiToken | null,
  config: { hostname: string; signingKeySecret: string },
  blobs: BlobStore,
  now = () => new Date(),
): Attester {
  const facts = (pkg?: PackageRef) => ({ hostname: config.hostname, publishedAt: now().toISOString(), ...(pkg ? { package: pkg } : {}) });
  const sign = async (statement: unknown, kind: PreparedStatement['kind'], summary?: PreparedStatement['summary']): Promise<PreparedStatement> => {
    const key = await currentAttestationKey(blobs, config.signingKeySecret, config.hostname);
    const envelope = await signEnvelope(new TextEncoder().encode(JSON.stringify(statement)), key.privateKey, key.kid);
    return { kind, envelope: new TextEncoder().encode(JSON.stringify(envelope)), ...(summary ? { summary } : {}) };
  };
  let why: string | undefined;
  if (!config.signingKeySecret) {
    return { kind: 'none', why: 'the registry has no SIGNING_KEY_SECRET to sign statements with', sign: async () => null };
  }
  if (actor.kind === 'ci' && ci) {
    try {
      buildProvenance(ci.claims, ci.publisher, [], facts()); // all claims present: decided before anything is written
      return {
        kind: 'build',
        async sign(subjects: Subject[], pkg: PackageRef) {
          const { statement, summary } = buildProvenance(ci.claims, ci.publisher, subjects, facts(pkg));
          return sign(statement, 'build', summary);
        },
      };
    } catch (error) {
      if (!(error instanceof IncompleteClaimsError)) throw error;
      why = error.message;
    }
  } else {
    why = `published by ${actor.kind === 'token' ? 'a publish token' : actor.kind === 'operator' ? 'the CLI with the storage credentials' : actor.kind}`;
  }
  return { kind: 'publish', why, sign: (subjects: Subject[], pkg: PackageRef) => sign(publishAttestation(actor.kind, subjects, facts(pkg)), 'publish') };
}
