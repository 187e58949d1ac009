import type { IRequest } from 'itty-router';
import { pathSegment } from '../http/responses';
import { providerAddress, type ProviderAddress } from '../protocol/address';

/**
 * The provider address a request's path names: its :hostname (or
 * `ownHostname` for routes without one, the registry's own), :namespace and
 * :type, decoded and normalised. Throws InputError (400) for a malformed or
 * missing part, naming it.
 */
export function requestAddress(request: IRequest, ownHostname?: string): ProviderAddress {
  return providerAddress(
    ownHostname ?? pathSegment(request.params.hostname, 'hostname'),
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.type, 'type'),
  );
}
