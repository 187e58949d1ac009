/**
 * The production environment of wrangler.toml, read with wrangler's own
 * config reader and changed by targeted line edits (comments, order and every
 * other section stay as the user wrote them). `npm run deploy` writes the KV
 * namespace id, the bucket name, REGISTRY_HOSTNAME and the custom-domain
 * route into `[env.ENV]` of the wrangler.toml it is given: the ids are not
 * secrets, and `--remote --env production` of the other scripts reads the
 * same file.
 */
import { InputError } from '../../../src/protocol/errors';

/** What the deploy needs to know about `[env.ENV]` as wrangler resolves it. */
export interface ProductionConfig {
  workerName: string;
  kvNamespaceId: string | null;
  bucketName: string | null;
  hostname: string | null;
  /** `routes` of the environment, as `{pattern, custom_domain}`. */
  routes: { pattern: string; custom_domain?: boolean }[];
  /** FILES_ORIGIN when PUBLIC_DOCUMENTS = "r2" in the environment's vars; absent otherwise. */
  filesOrigin?: string;
}

/** The values a deploy writes. */
export interface WantedConfig {
  kvNamespaceId: string;
  bucketName: string;
  hostname: string;
  /** --public-documents: PUBLIC_DOCUMENTS = "r2" and this FILES_ORIGIN in the environment's vars (absent: left as they are). */
  filesOrigin?: string;
}

/** One edited key, for printing: `[section] key: from → to` (from is null for an added key). */
export interface ConfigChange {
  section: string;
  key: string;
  from: string | null;
  to: string;
}

/** The placeholder id wrangler.toml ships with: not a real namespace. */
export const PLACEHOLDER_KV_ID = '00000000000000000000000000000000';
/** The hostname wrangler.toml ships with: a deploy needs a real one. */
export const PLACEHOLDER_HOSTNAME = 'registry.example.com';

/**
 * Reads `[env.ENV]` of the wrangler.toml at `configPath` with wrangler's
 * reader (inheritance, defaults). Throws InputError when the file cannot be
 * read or the environment is missing.
 */
export async function readProductionConfig(configPath: string, env: string): Promise<ProductionConfig> {
  const { unstable_readConfig } = await import('wrangler');
  let config;
  try {
    config = unstable_readConfig({ config: configPath, env }, { hideWarnings: true });
  } catch (error) {
    throw new InputError(`${configPath}: wrangler cannot read it: ${(error as Error).message}`);
  }
  const kv = config.kv_namespaces.find((ns: { binding: string }) => ns.binding === 'REGISTRY_KV');
  const r2 = config.r2_buckets.find((b: { binding: string }) => b.binding === 'REGISTRY_R2');
  const vars = config.vars as Record<string, unknown>;
  const hostname = vars.REGISTRY_HOSTNAME;
  const routes = (config.routes ?? []).map((route: unknown) =>
    typeof route === 'string' ? { pattern: route } : (route as { pattern: string; custom_domain?: boolean }),
  );
  return {
    workerName: config.name ?? 'edge-registry',
    kvNamespaceId: kv?.id ?? null,
    bucketName: r2?.bucket_name ?? null,
    hostname: typeof hostname === 'string' ? hostname : null,
    routes,
    ...(vars.PUBLIC_DOCUMENTS === 'r2' && typeof vars.FILES_ORIGIN === 'string' ? { filesOrigin: vars.FILES_ORIGIN } : {}),
  };
}

/** True when `config` already holds `wanted` (so no file change is needed). */
export function configMatches(config: ProductionConfig, wanted: WantedConfig): boolean {
  return (
    config.kvNamespaceId === wanted.kvNamespaceId &&
    config.bucketName === wanted.bucketName &&
    config.hostname === wanted.hostname &&
    config.routes.length === 1 &&
    config.routes[0]!.pattern === wanted.hostname &&
    config.routes[0]!.custom_domain === true &&
    (wanted.filesOrigin === undefined || config.filesOrigin === wanted.filesOrigin)
  );
}

interface Section {
  /** Header text between the brackets, e.g. env.production.vars */
  name: string;
  array: boolean;
  /** Index of the header line. */
  header: number;
  /** Index one past the section's last line. */
  end: number;
}

const HEADER = /^\s*(\[\[?)\s*([A-Za-z0-9_.\-"]+)\s*\]\]?\s*(#.*)?$/;

function sections(lines: string[]): Section[] {
  const found: Section[] = [];
  lines.forEach((line, index) => {
    const match = HEADER.exec(line);
    if (!match) return;
    if (found.length > 0) found[found.length - 1]!.end = index;
    found.push({ name: match[2]!, array: match[1] === '[[', header: index, end: lines.length });
  });
  return found;
}

const keyPattern = (key: string) => new RegExp(`^\\s*${key}\\s*=\\s*(.*?)\\s*$`);

/** Index of `key = …` inside the section, or -1. */
function findKey(lines: string[], section: Section, key: string): number {
  for (let i = section.header + 1; i < section.end; i++) if (keyPattern(key).test(lines[i]!)) return i;
  return -1;
}

/** Where a new key goes: after the section's last non-blank, non-comment line. */
function insertionPoint(lines: string[], section: Section): number {
  let at = section.header + 1;
  for (let i = section.header + 1; i < section.end; i++) {
    const line = lines[i]!.trim();
    if (line !== '' && !line.startsWith('#')) at = i + 1;
  }
  return at;
}

const str = (value: string) => JSON.stringify(value);

/**
 * Returns `text` with `[env.ENV]` set to `wanted`: the REGISTRY_KV binding's
 * id, the REGISTRY_R2 binding's bucket_name, vars.REGISTRY_HOSTNAME and
 * `routes = [{ pattern = HOSTNAME, custom_domain = true }]`, adding any
 * section or key that is missing; and the list of changes (empty when the
 * text already holds them). Pure: reads and writes nothing.
 */
export function editProductionConfig(text: string, env: string, wanted: WantedConfig): { text: string; changes: ConfigChange[] } {
  let lines = text.split('\n');
  const changes: ConfigChange[] = [];
  const prefix = `env.${env}`;

  const setIn = (find: (all: Section[]) => Section | undefined, create: string[], key: string, value: string, display: string) => {
    let section = find(sections(lines));
    if (!section) {
      if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
      lines.push('', ...create, '');
      section = find(sections(lines))!;
    }
    const at = findKey(lines, section, key);
    const line = `${key} = ${value}`;
    if (at >= 0) {
      const current = keyPattern(key).exec(lines[at]!)![1]!;
      // A multi-line value (routes = [ … ]) spans to its closing bracket.
      let last = at;
      if (current.startsWith('[') && !current.includes(']')) {
        while (last + 1 < section.end && !lines[last]!.includes(']')) last++;
      }
      const from = lines
        .slice(at, last + 1)
        .map((l) => l.trim())
        .join(' ')
        .replace(new RegExp(`^${key}\\s*=\\s*`), '');
      if (from === value) return;
      lines = [...lines.slice(0, at), line, ...lines.slice(last + 1)];
      changes.push({ section: section.name, key, from, to: display });
    } else {
      const point = insertionPoint(lines, section);
      lines = [...lines.slice(0, point), line, ...lines.slice(point)];
      changes.push({ section: section.name, key, from: null, to: display });
    }
  };

  const table = (name: string) => (all: Section[]) => all.find((s) => !s.array && s.name === name);
  const binding = (name: string, bindingName: string) => (all: Section[]) =>
    all.find(
      (s) =>
        s.array &&
        s.name === name &&
        findKey(lines, s, 'binding') >= 0 &&
        keyPattern('binding').exec(lines[findKey(lines, s, 'binding')]!)![1] === str(bindingName),
    );

  const route = `[{ pattern = ${str(wanted.hostname)}, custom_domain = true }]`;
  setIn(table(prefix), [`[${prefix}]`, `name = "edge-registry"`], 'routes', route, route);
  setIn(table(`${prefix}.vars`), [`[${prefix}.vars]`], 'REGISTRY_HOSTNAME', str(wanted.hostname), str(wanted.hostname));
  if (wanted.filesOrigin !== undefined) {
    // In wrangler.toml (not --var): the scripts' writes (mirror sync, --remote) read it there and write the static copies too.
    setIn(table(`${prefix}.vars`), [`[${prefix}.vars]`], 'PUBLIC_DOCUMENTS', str('r2'), str('r2'));
    setIn(table(`${prefix}.vars`), [`[${prefix}.vars]`], 'FILES_ORIGIN', str(wanted.filesOrigin), str(wanted.filesOrigin));
  }
  setIn(
    binding(`${prefix}.kv_namespaces`, 'REGISTRY_KV'),
    [`[[${prefix}.kv_namespaces]]`, 'binding = "REGISTRY_KV"'],
    'id',
    str(wanted.kvNamespaceId),
    str(wanted.kvNamespaceId),
  );
  setIn(
    binding(`${prefix}.r2_buckets`, 'REGISTRY_R2'),
    [`[[${prefix}.r2_buckets]]`, 'binding = "REGISTRY_R2"'],
    'bucket_name',
    str(wanted.bucketName),
    str(wanted.bucketName),
  );
  return { text: lines.join('\n'), changes };
}
