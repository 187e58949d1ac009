import { asObject, asString, optional } from './shape';

/**
 * Terraform's remote service discovery document
 * (GET /.well-known/terraform.json): service id → base URL, resolved by the
 * client against the document's own URL.
 */
export interface ServiceDiscovery {
  'providers.v1'?: string;
  'modules.v1'?: string;
  /** Terraform's login protocol (src/access/login-v1.ts). */
  'login.v1'?: { client: string; grant_types: string[]; authz: string; token: string; ports: number[] };
}

/** Where this registry serves providers.v1 (path-absolute). */
export const PROVIDERS_V1_PATH = '/v1/providers/';

/** The discovery document of the given services, keys in the order given. */
export function discoveryBody(services: ServiceDiscovery): string {
  return JSON.stringify(services satisfies ServiceDiscovery);
}

/**
 * Parses a discovery document. Throws WireShapeError when it is not an
 * object or a known service's URL is not a string; unknown services are kept out.
 */
export function parseServiceDiscovery(json: unknown): ServiceDiscovery {
  const body = asObject(json, 'terraform.json');
  const services: ServiceDiscovery = {};
  for (const id of ['providers.v1', 'modules.v1'] as const) {
    const url = optional(body[id], id, asString);
    if (url !== undefined) services[id] = url;
  }
  return services;
}
