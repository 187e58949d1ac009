/**
 * Reads what wrangler 4.86 prints for the commands `npm run deploy` asks
 * before it changes anything. Formats (from wrangler's source, recorded in
 * test/scripts/deploy/recorded/):
 *
 * - `wrangler whoami --json`: one JSON object, `{"loggedIn":true, "authType",
 *   "email", "accounts":[{id,name,…}]}`; not logged in: `{"loggedIn":false}`
 *   and exit status 1.
 * - `wrangler kv namespace list`: a JSON array `[{"id","title",…}]`.
 * - `wrangler r2 bucket list`: a banner, `Listing buckets...`, then one
 *   `name:  X` / `creation_date:  Y` block per bucket (no JSON option).
 * - `wrangler secret list --env E`: a JSON array `[{"name","type"}]`; a Worker
 *   never deployed: exit status 1 and `Worker "N" … not found.` on stderr.
 * - `wrangler r2 bucket lifecycle list B`: `Listing lifecycle rules for bucket 'B'...`,
 *   then one `name:` / `enabled:` / `prefix:` / `action:` block per rule (`prefix:
 *   (all prefixes)` for none), or `There are no lifecycle rules for bucket 'B'.`
 */

/** What one wrangler invocation printed. */
export interface WranglerResult {
  status: number;
  stdout: string;
  stderr: string;
}

export interface Account {
  id: string;
  name: string;
}

export type Auth = { loggedIn: false } | { loggedIn: true; authType: string; email: string | null; accounts: Account[] };

export interface KvNamespace {
  id: string;
  title: string;
}

/** The Worker's secrets, or `workerExists: false` when it has never been deployed. */
export type Secrets = { workerExists: true; names: string[] } | { workerExists: false };

/** Thrown when wrangler printed something these parsers do not recognise (a wrangler version with another format). */
export class WranglerOutputError extends Error {}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

/** stdout/stderr without colour codes. */
export function plain(text: string): string {
  return text.replace(ANSI, '');
}

/** The last top-level JSON value in `text` (wrangler may print a blank line or a banner before it). */
function lastJson(text: string, command: string): unknown {
  const body = plain(text).trim();
  const start = Math.min(...['[', '{'].map((c) => body.indexOf(c)).filter((i) => i >= 0));
  if (!Number.isFinite(start)) throw new WranglerOutputError(`\`${command}\` printed no JSON:\n${body}`);
  try {
    return JSON.parse(body.slice(start));
  } catch {
    throw new WranglerOutputError(`\`${command}\` printed output that is not JSON:\n${body}`);
  }
}

/**
 * `wrangler whoami --json`. Throws WranglerOutputError when the output is
 * neither shape (e.g. a network error printed instead).
 */
export function parseWhoami(result: WranglerResult): Auth {
  const value = lastJson(result.stdout, 'wrangler whoami --json') as { loggedIn?: unknown; authType?: unknown; email?: unknown; accounts?: unknown };
  if (value?.loggedIn === false) return { loggedIn: false };
  if (value?.loggedIn !== true || !Array.isArray(value.accounts)) {
    throw new WranglerOutputError(`\`wrangler whoami --json\` printed an unexpected object: ${JSON.stringify(value)}`);
  }
  const accounts = (value.accounts as { id?: unknown; name?: unknown }[]).map((a) => ({ id: String(a.id), name: String(a.name) }));
  return { loggedIn: true, authType: String(value.authType ?? ''), email: typeof value.email === 'string' ? value.email : null, accounts };
}

/** `wrangler kv namespace list`. Throws WranglerOutputError unless it is an array of {id, title}. */
export function parseKvNamespaces(result: WranglerResult): KvNamespace[] {
  const value = lastJson(result.stdout, 'wrangler kv namespace list');
  if (!Array.isArray(value) || !value.every((n) => typeof n?.id === 'string' && typeof n?.title === 'string')) {
    throw new WranglerOutputError(`\`wrangler kv namespace list\` printed an unexpected value: ${JSON.stringify(value).slice(0, 300)}`);
  }
  return (value as KvNamespace[]).map(({ id, title }) => ({ id, title }));
}

/** `wrangler r2 bucket list`: the bucket names. Throws WranglerOutputError when "Listing buckets..." is missing. */
export function parseR2Buckets(result: WranglerResult): string[] {
  const text = plain(result.stdout);
  const at = text.indexOf('Listing buckets...');
  if (at < 0) throw new WranglerOutputError(`\`wrangler r2 bucket list\` printed an unexpected output:\n${text.trim()}`);
  const names: string[] = [];
  for (const line of text.slice(at).split('\n')) {
    const match = /^name:\s+(\S+)\s*$/.exec(line);
    if (match) names.push(match[1]!);
  }
  return names;
}

/**
 * `wrangler secret list --env E`. A failure whose output says the Worker was
 * not found means it was never deployed; any other failure throws
 * WranglerOutputError.
 */
export function parseSecrets(result: WranglerResult): Secrets {
  if (result.status !== 0) {
    if (/Worker "[^"]+".* not found/.test(plain(result.stderr + result.stdout))) return { workerExists: false };
    throw new WranglerOutputError(`\`wrangler secret list\` failed (exit status ${result.status}):\n${plain(result.stderr + result.stdout).trim()}`);
  }
  const value = lastJson(result.stdout, 'wrangler secret list');
  if (!Array.isArray(value) || !value.every((s) => typeof s?.name === 'string')) {
    throw new WranglerOutputError(`\`wrangler secret list\` printed an unexpected value: ${JSON.stringify(value).slice(0, 300)}`);
  }
  return { workerExists: true, names: (value as { name: string }[]).map((s) => s.name) };
}

export interface LifecycleRule {
  name: string;
  /** '' for a rule on every object. */
  prefix: string;
}

/** `wrangler r2 bucket lifecycle list BUCKET`: each rule's name and prefix. Throws WranglerOutputError when the header is missing. */
export function parseLifecycleRules(result: WranglerResult): LifecycleRule[] {
  const text = plain(result.stdout);
  const at = text.indexOf('Listing lifecycle rules for bucket');
  if (at < 0) throw new WranglerOutputError(`\`wrangler r2 bucket lifecycle list\` printed an unexpected output:\n${text.trim()}`);
  const rules: LifecycleRule[] = [];
  for (const line of text.slice(at).split('\n')) {
    const name = /^name:\s+(.+?)\s*$/.exec(line);
    if (name) rules.push({ name: name[1]!, prefix: '' });
    const prefix = /^prefix:\s+(.+?)\s*$/.exec(line);
    if (prefix && rules.length) rules[rules.length - 1]!.prefix = prefix[1] === '(all prefixes)' ? '' : prefix[1]!;
  }
  return rules;
}
