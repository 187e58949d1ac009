import type { ProviderAddress } from '../protocol/address';
import type { ModuleAddress } from '../protocol/modules-v1';

/**
 * The name of the Durable Object counting one provider's or one module's
 * downloads (DOWNLOADS.idFromName(name)): one object per package, so the
 * load of a popular provider never touches another's counts.
 */
export const providerCounterName = ({ hostname, namespace, type }: ProviderAddress) => `providers/${hostname}/${namespace}/${type}`;
export const moduleCounterName = ({ hostname, namespace, name, system }: ModuleAddress) => `modules/${hostname}/${namespace}/${name}/${system}`;
