import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * What the mirror reads from Terraform's CLI configuration, as Terraform does.
 *
 * Credentials for upstream registries, found where Terraform finds them:
 * 1. TF_TOKEN_<host> (dots as `_`, dashes as `__`; hosts with a port cannot
 *    be named this way, as in Terraform), which wins over
 * 2. `credentials "HOST" { token = "…" }` blocks in the CLI configuration
 *    (TF_CLI_CONFIG_FILE, else ~/.terraformrc), then
 * 3. ~/.terraform.d/credentials.tfrc.json (written by `terraform login`).
 * Tokens are returned to the HTTP client only; never logged.
 */
export interface CredentialsSource {
  /** providers.v1 of a `host "NAME" { services = { "providers.v1" = "URL" } }` block, which replaces discovery for NAME. */
  providersServiceFor(host: string): string | undefined;
  tokenFor(host: string): string | undefined;
  /** Where the token for `host` comes from (for messages), or undefined. */
  describe(host: string): string | undefined;
}

/** Builds the source from the environment and files; unreadable files count as empty. */
export function terraformCredentials(env: NodeJS.ProcessEnv = process.env): CredentialsSource {
  const home = env.HOME ?? homedir();
  const configPath = env.TF_CLI_CONFIG_FILE || join(home, '.terraformrc');
  const configText = readOrEmpty(configPath);
  const fromConfig = parseCliConfigCredentials(configText);
  const hosts = parseCliConfigHosts(configText);
  const fromLogin = parseCredentialsJson(readOrEmpty(join(home, '.terraform.d', 'credentials.tfrc.json')));
  const lookup = (host: string): { token: string; from: string } | undefined => {
    const name = hostEnvName(host.toLowerCase());
    const envToken = name ? env[name] : undefined;
    if (envToken) return { token: envToken, from: name! };
    const configured = fromConfig.get(host.toLowerCase());
    if (configured) return { token: configured, from: `credentials "${host}" in ${configPath}` };
    const login = fromLogin.get(host.toLowerCase());
    if (login) return { token: login, from: 'credentials.tfrc.json' };
    return undefined;
  };
  return {
    tokenFor: (host) => lookup(host)?.token,
    describe: (host) => lookup(host)?.from,
    providersServiceFor: (host) => hosts.get(host.toLowerCase())?.['providers.v1'],
  };
}

/** TF_TOKEN_ variable name for a hostname, or null when the host has a port (no variable can name it). */
export function hostEnvName(host: string): string | null {
  if (host.includes(':')) return null;
  return `TF_TOKEN_${host.replace(/-/g, '__').replace(/\./g, '_')}`;
}

/**
 * The `credentials "HOST" { token = "…" }` blocks of an HCL CLI configuration
 * (the only part read here). Comments (#, //, /* *\/) are ignored.
 */
export function parseCliConfigCredentials(text: string): Map<string, string> {
  const withoutComments = stripComments(text);
  const tokens = new Map<string, string>();
  const block = /credentials\s+"([^"]+)"\s*\{([^}]*)\}/g;
  for (let match = block.exec(withoutComments); match; match = block.exec(withoutComments)) {
    const token = /\btoken\s*=\s*"([^"]*)"/.exec(match[2]!);
    if (token) tokens.set(match[1]!.toLowerCase(), token[1]!);
  }
  return tokens;
}

/**
 * The `host "NAME" { services = { "ID" = "URL", … } }` blocks: Terraform uses
 * them instead of NAME's /.well-known/terraform.json (a registry reached under
 * another name, or on a port).
 */
export function parseCliConfigHosts(text: string): Map<string, Record<string, string>> {
  const hosts = new Map<string, Record<string, string>>();
  const block = /host\s+"([^"]+)"\s*\{\s*services\s*=\s*\{([^}]*)\}\s*\}/g;
  const clean = stripComments(text);
  for (let match = block.exec(clean); match; match = block.exec(clean)) {
    const services: Record<string, string> = {};
    const entry = /"([^"]+)"\s*=\s*"([^"]*)"/g;
    for (let e = entry.exec(match[2]!); e; e = entry.exec(match[2]!)) services[e[1]!] = e[2]!;
    hosts.set(match[1]!.toLowerCase(), services);
  }
  return hosts;
}

function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*(#|\/\/).*$/gm, '');
}

function parseCredentialsJson(text: string): Map<string, string> {
  const tokens = new Map<string, string>();
  try {
    const parsed = JSON.parse(text) as { credentials?: Record<string, { token?: unknown }> };
    for (const [host, value] of Object.entries(parsed.credentials ?? {})) {
      if (typeof value?.token === 'string') tokens.set(host.toLowerCase(), value.token);
    }
  } catch {
    // absent or not JSON: no tokens
  }
  return tokens;
}

function readOrEmpty(path: string): string {
  try {
    return existsSync(path) ? readFileSync(path, 'utf8') : '';
  } catch {
    return '';
  }
}
