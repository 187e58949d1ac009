import type { Env } from '../env';
import { settings } from '../config';
import { sha256Hex } from '../protocol/hashes';
import { cookieValue } from './session';
import type { CliAuthzRequest } from './login-v1';
import type { ProviderRequest } from './provider';
import { seal, unseal } from './crypto/seal';

/**
 * The broker's in-flight state between sending the browser to the identity
 * provider and its return: who asked (Terraform's request, or a page
 * sign-in with where to go next) and our own state, nonce and PKCE verifier
 * — sealed (encrypted + authenticated) in a cookie, so no KV or R2 is
 * touched before the provider answers. The cookie's name carries a hash of
 * our provider `state`, so parallel logins in one browser do not clobber
 * each other, and the callback finds the flow only for the state it sent.
 */
export interface LoginFlow {
  kind: 'cli' | 'page';
  cli?: CliAuthzRequest;
  /** Page sign-in: the path to return to (already checked by safeNext). */
  next?: string;
  provider: ProviderRequest;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/** How long a person has to complete the provider's sign-in. */
export const FLOW_SECONDS = 600;

const flowCookieName = (state: string) => `__Host-login-${sha256Hex(state).slice(0, 16)}`;

/** The Set-Cookie value that stores `flow`. */
export async function flowCookie(env: Env, flow: LoginFlow): Promise<string> {
  const value = await seal(settings(env), 'login-flow', flow);
  return `${flowCookieName(flow.provider.state)}=${value}; Path=/; Max-Age=${FLOW_SECONDS}; HttpOnly; Secure; SameSite=Lax`;
}

/** The Set-Cookie value that removes the flow of `state`. */
export function clearFlowCookie(state: string): string {
  return `${flowCookieName(state)}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax`;
}

/**
 * The flow the provider's `state` belongs to, or null: no such cookie (a
 * state this browser never started: mismatch or forgery), altered, expired,
 * or sealed for another state. Never throws for bad input.
 */
export async function readFlow(request: Request, env: Env, state: string, now = Date.now()): Promise<LoginFlow | null> {
  if (state === '' || state.length > 512) return null;
  const value = cookieValue(request.headers.get('cookie'), flowCookieName(state));
  if (value === null) return null;
  const flow = (await unseal(settings(env), 'login-flow', value)) as LoginFlow | null;
  if (flow === null || typeof flow !== 'object' || typeof flow.expiresAt !== 'number' || flow.expiresAt <= now) return null;
  if (flow.provider?.state !== state) return null;
  return flow;
}
