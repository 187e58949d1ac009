import type { IRequest } from 'itty-router';
import { settings } from '../config';
import type { Env } from '../env';
import { notFound, pathSegment } from '../http/responses';
import { formatAddress } from '../protocol/address';
import { formatModuleAddress } from '../protocol/modules-v1';
import { parseVersion } from '../protocol/version';
import { attestationPublicKeys } from '../store/keys/attestation-keys';
import { readModuleRecord } from '../store/modules/record';
import type { ProvenanceRef } from '../store/provenance';
import { readVersionRecord } from '../store/providers/version-records';
import { storeFromEnv, type Store } from '../store/store';
import { requestAddress, requestModuleAddress } from './params';

/**
 * The provenance routes (docs/provenance.md):
 *
 *   GET /v1/provenance/keys                                   the registry's attestation public keys, a JWK set
 *                                                             {"keys": [...]}, old keys included (public, never secret)
 *   GET /v1/provenance/providers/:namespace/:type/:version    the version's DSSE envelope (application/json)
 *   GET /v1/provenance/modules/:namespace/:name/:system/:version
 *
 * A version without a statement, or no such version, is 404. In private mode
 * the statement routes take a read token like the documents (src/access/access.ts
 * guards in src/index.ts). Costs: the version's R2 record and the envelope.
 */

const store = (env: Env): Store => storeFromEnv(env);

export async function provenanceKeys(_request: IRequest, env: Env): Promise<Response> {
  const keys = await attestationPublicKeys(store(env).blobs, settings(env).hostname);
  return new Response(JSON.stringify({ keys }), { headers: { 'content-type': 'application/jwk-set+json', 'cache-control': 'public, max-age=300' } });
}

export async function providerProvenance(request: IRequest, env: Env): Promise<Response> {
  const address = requestAddress(request, settings(env).hostname);
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const record = await readVersionRecord(store(env), address, version);
  if (!record) return notFound(`provider ${formatAddress(address)} has no version ${version}`);
  return envelopeResponse(env, record.provenance, `${formatAddress(address)} ${version}`);
}

export async function moduleProvenance(request: IRequest, env: Env): Promise<Response> {
  const address = requestModuleAddress(request, settings(env).hostname);
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const record = await readModuleRecord(store(env), address, version);
  if (!record) return notFound(`module ${formatModuleAddress(address)} has no version ${version}`);
  return envelopeResponse(env, record.provenance, `${formatModuleAddress(address)} ${version}`);
}

async function envelopeResponse(env: Env, ref: ProvenanceRef | undefined, name: string): Promise<Response> {
  if (!ref) return notFound(`${name} has no provenance statement: it was published before statements were kept, or without SIGNING_KEY_SECRET`);
  const object = await env.REGISTRY_R2.get(ref.key);
  if (!object) return notFound(`${name}: its provenance statement is missing from storage; publish the same release again to see what is stored`);
  return new Response(object.body, {
    headers: {
      'content-type': 'application/json',
      'cache-control': settings(env).releaseDocumentCacheControl,
      // What the envelope is, without parsing it: build provenance or only a publish attestation.
      'x-provenance-kind': ref.kind,
    },
  });
}
