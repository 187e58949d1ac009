import type { IRequest } from 'itty-router';
import { pathSegment } from '../http/responses';
import { providerAddress, type ProviderAddress } from '../protocol/address';
import { moduleAddress, type ModuleAddress } from '../protocol/modules-v1';

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

/** The module address a request's path names under `hostname`: :namespace, :name and :system, as requestAddress (InputError 400 naming a bad part). */
export function requestModuleAddress(request: IRequest, hostname: string): ModuleAddress {
  return moduleAddress(
    hostname,
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.name, 'name'),
    pathSegment(request.params.system, 'system'),
  );
}
