import { parseScope } from './scope';

/**
 * LOGIN_POLICY: which people get which read scopes when they sign in with
 * the organisation's identity provider, and who is an admin.
 *
 *   { "rules": [ { "if": { "groups": "platform" }, "scopes": ["*"] }, … ],
 *     "admins": { "groups": "registry-admins" },
 *     "token_days": 30 }
 *
 * A condition `{ CLAIM: VALUE, … }` holds when every listed claim matches: a
 * string claim equals VALUE, an array claim contains it. `email_domain` is
 * the domain of `email`, and `email` matches, only when `email_verified` is
 * true (an unverified address is whatever the person typed). Scopes are the
 * union of the matching rules. Nobody is let in by default.
 */
export interface LoginPolicy {
  rules: { if: Condition; scopes: string[] }[];
  /** Who is an admin (sees and revokes everyone's tokens); null = nobody. */
  admins: Condition | null;
  /** The longest lifetime of a token minted by login or on the Tokens page, in days. */
  tokenDays: number;
}

/** Claim name → required value (all must match). */
export type Condition = Record<string, string>;

/** What the policy grants one person. */
export interface Grant {
  scopes: string[];
  admin: boolean;
  /**
   * A matching rule (or the admin condition) names a claim other than the
   * person's identity (`sub`, `email`, `email_domain`): group membership and
   * the like, which the identity provider changes when someone leaves. Page
   * sessions of such grants last GROUP_SESSION_SECONDS, not 12 hours.
   */
  fromGroups: boolean;
}

/** How long a page session lasts when its scopes or admin role come from groups (see Grant.fromGroups). */
export const GROUP_SESSION_SECONDS = 60 * 60;
const IDENTITY_CLAIMS = new Set(['sub', 'email', 'email_domain']);
const namesGroups = (condition: Condition) => Object.keys(condition).some((claim) => !IDENTITY_CLAIMS.has(claim));

/** Thrown by parsePolicy: the message names the problem and the fix (shown on the 503 page). */
export class PolicyError extends Error {
  override name = 'PolicyError';
}

const CLAIM = /^[A-Za-z0-9_.:-]{1,100}$/;
/**
 * Names an object literal treats specially: `condition["__proto__"] = v`
 * sets the prototype instead of a claim, leaving a condition with no claims,
 * which matches everybody; `constructor` and `prototype` would be read from
 * Object.prototype off every claims object. Never claim names of an ID token.
 */
const RESERVED_CLAIMS = new Set(['__proto__', 'constructor', 'prototype']);
const MAX_TOKEN_DAYS = 365;

function parseCondition(value: unknown, where: string): Condition {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PolicyError(`${where} must be an object of claim → value`);
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) throw new PolicyError(`${where} is empty: it would match everybody; name at least one claim`);
  // No prototype: whatever a name, it is a key of this object and nothing else.
  const condition: Condition = Object.create(null) as Condition;
  for (const [claim, wanted] of entries) {
    if (!CLAIM.test(claim)) throw new PolicyError(`${where}: "${claim}" is not a claim name`);
    if (RESERVED_CLAIMS.has(claim))
      throw new PolicyError(
        `${where}: "${claim}" cannot be a claim name (a JavaScript object's own name); name the ID token's claim, such as "groups" or "sub"`,
      );
    if (typeof wanted !== 'string' || wanted === '') throw new PolicyError(`${where}.${claim} must be a non-empty string`);
    condition[claim] = wanted;
  }
  return condition;
}

/**
 * Parses LOGIN_POLICY. Throws PolicyError naming the first problem: not
 * JSON, no rules, a rule without a condition or scopes, an invalid scope
 * (see parseScope), unknown keys, a claim named `__proto__`, `constructor`
 * or `prototype`, token_days not a whole number in 1..365.
 * Never returns a policy that lets everybody in by accident: an empty
 * condition is refused.
 */
export function parsePolicy(text: string | undefined): LoginPolicy {
  if (text === undefined || text.trim() === '')
    throw new PolicyError('LOGIN_POLICY is not set: nobody could sign in (set it to a JSON policy, see docs/sign-in.md)');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new PolicyError(`LOGIN_POLICY is not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PolicyError('LOGIN_POLICY must be a JSON object with "rules"');
  const body = value as Record<string, unknown>;
  for (const key of Object.keys(body)) {
    if (!['rules', 'admins', 'token_days'].includes(key)) throw new PolicyError(`LOGIN_POLICY has an unknown key "${key}" (known: rules, admins, token_days)`);
  }
  if (!Array.isArray(body.rules) || body.rules.length === 0) throw new PolicyError('LOGIN_POLICY.rules must be a non-empty array');
  const rules = body.rules.map((rule: unknown, i: number) => {
    const where = `LOGIN_POLICY.rules[${i}]`;
    if (typeof rule !== 'object' || rule === null) throw new PolicyError(`${where} must be an object with "if" and "scopes"`);
    const r = rule as Record<string, unknown>;
    for (const key of Object.keys(r)) if (key !== 'if' && key !== 'scopes') throw new PolicyError(`${where} has an unknown key "${key}"`);
    if (!Array.isArray(r.scopes) || r.scopes.length === 0) throw new PolicyError(`${where}.scopes must be a non-empty array of scopes`);
    const scopes = r.scopes.map((scope: unknown) => {
      if (typeof scope !== 'string') throw new PolicyError(`${where}.scopes holds a non-string`);
      try {
        return parseScope(scope, 'read');
      } catch (error) {
        throw new PolicyError(`${where}.scopes: ${(error as Error).message}`);
      }
    });
    return { if: parseCondition(r.if, `${where}.if`), scopes };
  });
  const admins = body.admins === undefined ? null : parseCondition(body.admins, 'LOGIN_POLICY.admins');
  const days = body.token_days ?? 30;
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > MAX_TOKEN_DAYS) {
    throw new PolicyError(`LOGIN_POLICY.token_days must be a whole number of days from 1 to ${MAX_TOKEN_DAYS}`);
  }
  return { rules, admins, tokenDays: days };
}

function claimMatches(claims: Record<string, unknown>, claim: string, wanted: string): boolean {
  if (claim === 'email_domain') {
    const email = claims.email;
    if (claims.email_verified !== true || typeof email !== 'string') return false;
    const at = email.lastIndexOf('@');
    return at > 0 && email.slice(at + 1).toLowerCase() === wanted.toLowerCase();
  }
  // An address the provider has not verified proves nothing.
  if (claim === 'email' && claims.email_verified !== true) return false;
  const value = Object.hasOwn(claims, claim) ? claims[claim] : undefined;
  if (typeof value === 'string') return value === wanted;
  if (Array.isArray(value)) return value.some((item) => item === wanted);
  return false;
}

function holds(condition: Condition, claims: Record<string, unknown>): boolean {
  return Object.entries(condition).every(([claim, wanted]) => claimMatches(claims, claim, wanted));
}

/** The scopes (union of matching rules, in rule order, no duplicates) and admin role the policy grants these ID-token claims. Empty scopes = no access. */
export function evaluatePolicy(policy: LoginPolicy, claims: Record<string, unknown>): Grant {
  const scopes = new Set<string>();
  let fromGroups = false;
  for (const rule of policy.rules) {
    if (!holds(rule.if, claims)) continue;
    for (const scope of rule.scopes) scopes.add(scope);
    fromGroups ||= namesGroups(rule.if);
  }
  const admin = policy.admins !== null && holds(policy.admins, claims);
  if (admin) fromGroups ||= namesGroups(policy.admins!);
  return { scopes: [...scopes], admin, fromGroups };
}
