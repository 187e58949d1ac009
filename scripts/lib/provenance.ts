import { operatorActor } from '../../src/store/audit/actor';
import { attesterFor } from '../../src/provenance/attest';
import type { Attester } from '../../src/store/provenance';
import type { BlobStore } from '../../src/store/store';
import type { RegistryConfig } from './config';
import { readDevVar, SIGNING_KEY_SECRET } from './dev/vars';

/**
 * The attester of a publish by the CLI with the storage credentials
 * (publish-provider, publish-module without --registry): a publish
 * attestation naming the operator — never build provenance — signed with the
 * registry's attestation key when the CLI has the secret that opens it
 * ($SIGNING_KEY_SECRET, or on the local state the project's .dev.vars), else
 * none. Either way the namespace's provenance policy refuses it
 * (src/store/provenance.ts checkProvenancePolicy).
 */
export function cliAttester(config: RegistryConfig, remote: boolean | undefined, blobs: BlobStore, env: NodeJS.ProcessEnv = process.env): Attester {
  const secret = env[SIGNING_KEY_SECRET] || (remote ? '' : (readDevVar(config.projectRoot, SIGNING_KEY_SECRET) ?? ''));
  const attester = attesterFor(operatorActor(remote), null, { hostname: config.hostname, signingKeySecret: secret }, blobs);
  return attester.kind === 'none' ? { ...attester, why: 'published by the CLI with the storage credentials' } : attester;
}
