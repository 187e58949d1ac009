import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { settings } from '../config';
import { requestModuleAddress } from './params';
import { formatModuleAddress } from '../protocol/modules-v1';
import { readModuleLifecyclePage } from '../store/lifecycle/read';
import { lifecycleWarnings } from '../store/lifecycle/state';

/**
 * GET /v1/lifecycle/modules/:namespace/:name/:system — a module's
 * deprecations and withdrawals for scripts: {"module": "HOST/NS/NAME/SYSTEM",
 * "deprecated": {"message", "at"} | null, "versions": {"1.2.0": {"deprecated"?,
 * "withdrawn"?}}, "warnings": ["…"]}. modules.v1 has no `warnings` field
 * (providers.v1's versions response has; /work/shared/reference), so
 * neither Terraform nor OpenTofu can print a module's deprecation: it is on
 * the module pages and here, with `warnings` worded as a provider's would be.
 * A module never marked (or unknown) answers no marks. One KV read on an
 * isolate miss (the lifecycle copy the pages read). Private mode: a read
 * token for the namespace (src/index.ts).
 */
export async function moduleLifecycleJson(request: IRequest, env: Env): Promise<Response> {
  const address = requestModuleAddress(request, settings(env).hostname);
  const state = await readModuleLifecyclePage(env.REGISTRY_KV, address, settings(env).listTtlMs);
  const name = formatModuleAddress(address);
  const body = {
    module: name,
    deprecated: state?.deprecated ?? null,
    versions: state?.versions ?? {},
    warnings: state ? lifecycleWarnings(state, name) : [],
  };
  return new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json', 'cache-control': settings(env).listCacheControl } });
}
