import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { settings } from '../config';
import { errorResponse } from '../http/responses';
import { InputError } from '../protocol/errors';
import { moduleCounterName, providerCounterName } from '../downloads/names';
import { readDownloads, WINDOW_DAYS } from '../downloads/read';
import { requestAddress, requestModuleAddress } from './params';

/**
 * GET /v1/downloads/providers/:namespace/:type,
 * GET /v1/downloads/mirror/:hostname/:namespace/:type and
 * GET /v1/downloads/modules/:namespace/:name/:system — download counts for
 * scripts: {"days": 30, "since": "YYYY-MM-DD", "total": N, "versions":
 * {"1.2.0": {"total": N, "platforms": {"linux_amd64": N}}}, "daily": [{"day",
 * "count"}]} over the last `?days=` days (1–400, default 30) including today
 * (UTC). Counts come from the package's Durable Object (src/downloads/),
 * never KV; a package never downloaded (or unknown) has total 0. 400 for
 * malformed parts or days; 503 when the DOWNLOADS binding is missing.
 * Private mode: the read-token guard of the package's namespace (src/index.ts).
 */
export async function providerDownloads(request: IRequest, env: Env): Promise<Response> {
  const address = requestAddress(request, settings(env).hostname);
  return answer(env, providerCounterName(address), request);
}

/** GET /v1/downloads/mirror/:hostname/:namespace/:type — the same for a provider the network mirror holds (its archives are counted by the same route). */
export async function mirrorDownloads(request: IRequest, env: Env): Promise<Response> {
  const address = requestAddress(request);
  return answer(env, providerCounterName(address), request);
}

export async function moduleDownloads(request: IRequest, env: Env): Promise<Response> {
  const address = requestModuleAddress(request, settings(env).hostname);
  return answer(env, moduleCounterName(address), request);
}

async function answer(env: Env, counter: string, request: IRequest): Promise<Response> {
  const raw = new URL(request.url).searchParams.get('days');
  const days = raw === null ? WINDOW_DAYS : Number(raw);
  if (!Number.isInteger(days) || days < 1 || days > 400) throw new InputError(`days must be a whole number from 1 to 400, not "${raw}"`);
  const summary = await readDownloads(env, counter, days);
  if (summary === null)
    return errorResponse(503, 'download counts are not configured on this deployment (no DOWNLOADS Durable Object binding in wrangler.toml)');
  return new Response(JSON.stringify(summary), {
    headers: { 'content-type': 'application/json', 'cache-control': `${settings(env).access === 'private' ? 'private' : 'public'}, max-age=60` },
  });
}
