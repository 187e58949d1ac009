/**
 * `npm run mirror -- sync|import|list …`: fill the network mirror from
 * upstream registries (verified as Terraform verifies), from a directory made
 * by `terraform providers mirror`, and list what it holds. See
 * scripts/lib/mirror/ for the pieces and README "Mirroring upstream providers".
 */
import { parseArgs } from 'node:util';
import { formatAddress, InputError, parsePlatformName, parseSourceAddress } from '../src/protocol/index';
import { listMirroredProviders } from '../src/store/mirror/write';
import { checkStateTarget, run, say, UsageError } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import { openLocalStore } from './lib/stores/local';
import { type StoreHandle } from './lib/stores/handle';
import { readSyncConfig } from './lib/mirror/allow-list';
import { DEFAULT_UPSTREAM } from '../src/protocol/mirror-policy';
import { terraformCredentials } from './lib/mirror/cli-config';
import { findPackedProviders, importDirectory } from './lib/mirror/import';
import { policyCommand, validatePolicyFile } from './lib/mirror/policy-cli';
import type { MirrorSummary } from './lib/mirror/summary';
import { syncProviders, type SyncRequest } from './lib/mirror/sync';
import { UpstreamHttp } from './lib/mirror/upstream-http';
import { openRemoteStore } from './lib/stores/remote';
import { recordAudit } from './lib/audit';
import { removeCommand } from './lib/mirror/remove';

const USAGE = `usage:
  npm run mirror -- sync HOST/NS/TYPE|NS/TYPE --version CONSTRAINT [--platform OS_ARCH …] [options]
  npm run mirror -- sync --config mirror.json [options]
  npm run mirror -- import DIR [options]          a \`terraform providers mirror\` directory (packed layout)
  npm run mirror -- list [--json] [options]
  npm run mirror -- policy set mirror.json | show | clear [options]   the pull-through policy the Worker enforces
  npm run mirror -- remove HOST/NS/TYPE --version X.Y.Z [--json] [options]   delete a mirrored upstream version
                          (lists rebuilt; versions published here are never deleted: npm run lifecycle -- withdraw)

  --version CONSTRAINT    Terraform version constraint, e.g. '~> 3.5' (prereleases only when named exactly)
  --platform OS_ARCH      platform to mirror (repeatable; default: every platform upstream offers)
  --config FILE           the allow-list (mirror.json); see README "Mirroring upstream providers"
  --dry-run               print the plan: no archive downloaded, nothing written
  --json                  print one summary object on stdout (progress stays on stderr)
  --concurrency N         archives downloaded at once (default 4)
  --timeout SECONDS       per request: until headers, and between body chunks (default 30)
  --retries N             retries on 429, 5xx, timeouts, connection errors (default 4; Retry-After honoured)
  --remote                write to Cloudflare (as publish-provider --remote); --env NAME picks the environment
  --wrangler-config PATH  wrangler.toml (default ./wrangler.toml)
  --persist-to DIR        local state root, as wrangler dev --persist-to (default .wrangler/state)
  --verbose               stack traces for unexpected errors

Upstream credentials as Terraform finds them: TF_TOKEN_<host>, credentials "HOST" { token = "…" } in
$TF_CLI_CONFIG_FILE or ~/.terraformrc; host "NAME" { services = { "providers.v1" = "URL" } } blocks there
replace discovery for NAME. A private CA: NODE_EXTRA_CA_CERTS=/path/ca.pem.
Exit status: 0 when everything verified (or was up to date), 1 when anything failed, 2 for usage.`;

const OPTIONS = {
  version: { type: 'string' },
  platform: { type: 'string', multiple: true },
  config: { type: 'string' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
  concurrency: { type: 'string' },
  timeout: { type: 'string' },
  retries: { type: 'string' },
  remote: { type: 'boolean' },
  env: { type: 'string' },
  'wrangler-config': { type: 'string' },
  'persist-to': { type: 'string' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ allowPositionals: true; options: typeof OPTIONS }>>['values'];
type Command = 'sync' | 'import' | 'list' | 'policy' | 'remove';

// Exit codes and the one-line report of an unexpected failure come from scripts/lib/cli.ts like every command's.
run(main, USAGE);

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: OPTIONS });
  const [command, ...rest] = positionals;
  if (values.help) {
    say(USAGE);
    return;
  }
  if (!command || !['sync', 'import', 'list', 'policy', 'remove'].includes(command))
    throw new UsageError(command ? `unknown command "${command}"` : 'give a command: sync, import, list, policy or remove');
  checkStateTarget(values);
  const counts = runCounts(values);
  const sync = command === 'sync' ? syncRequests(values, rest) : { requests: [], policyHosts: {} };
  checkCommandOptions(command as Command, values, rest);

  const config = await readRegistryConfig({ configPath: values['wrangler-config'], env: values.env, persistTo: values['persist-to'] });
  // The directory is checked before the store is opened: a wrong or empty folder is named first, not missing credentials.
  if (command === 'import') findPackedProviders(rest[0]!);
  const store: StoreHandle = values.remote
    ? openRemoteStore(config, process.env, {
        onProgress: (key, sent) => {
          if (sent >= 64 * 1024 * 1024) say(`  sent ${(sent / 1e6).toFixed(0)} MB of ${key.slice(key.lastIndexOf('/') + 1)}`);
        },
      })
    : await openLocalStore(config);
  try {
    if (command === 'policy') {
      await policyCommand(rest, store, { say, print: (text) => process.stdout.write(text) }, config.hostname);
    } else if (command === 'remove') {
      const result = await removeCommand(rest[0]!, values.version!, store, config.hostname, values.remote);
      if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    } else if (command === 'list') {
      await listCommand(store, config.hostname, values.json);
    } else {
      await syncOrImport(command as 'sync' | 'import', rest, values, { store, hostname: config.hostname, ...sync, ...counts });
    }
  } finally {
    await store.close();
  }
}

/** --concurrency, --timeout (seconds → ms) and --retries, with their defaults. Throws UsageError for a value below its minimum. */
function runCounts(values: Values): { concurrency: number; timeoutMs: number; retries: number } {
  const count = (name: string, value: string | undefined, fallback: number, min: number) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isFinite(n) || n < min) throw new UsageError(`--${name} must be a number ≥ ${min}`);
    return n;
  };
  return {
    concurrency: Math.floor(count('concurrency', values.concurrency, 4, 1)),
    timeoutMs: count('timeout', values.timeout, 30, 0.05) * 1000,
    retries: Math.floor(count('retries', values.retries, 4, 0)),
  };
}

/** What `sync` is asked for: from --config mirror.json, or one address with --version (and --platform). */
function syncRequests(values: Values, rest: readonly string[]): { requests: SyncRequest[]; policyHosts: Record<string, string> } {
  if (values.config) {
    if (rest.length || values.version || values.platform)
      throw new UsageError('--config takes the providers from the file: no address, --version or --platform with it');
    const fromFile = readSyncConfig(values.config);
    for (const line of fromFile.skipped) say(line);
    return { requests: fromFile.requests, policyHosts: fromFile.providersService };
  }
  if (rest.length !== 1) throw new UsageError('sync takes one provider address (or --config mirror.json)');
  if (values.version === undefined) throw new UsageError('--version CONSTRAINT is required (e.g. --version "~> 3.5"); an allow-list names what it allows');
  return {
    requests: [
      { address: parseSourceAddress(rest[0]!, DEFAULT_UPSTREAM), constraints: values.version, platforms: (values.platform ?? []).map(parsePlatformName) },
    ],
    policyHosts: {},
  };
}

/** The arguments each command other than sync takes; UsageError for any other. */
function checkCommandOptions(command: Command, values: Values, rest: readonly string[]): void {
  if (command === 'sync') return;
  if (command === 'policy') {
    if (values.version || values.platform || values.config || values['dry-run'])
      throw new UsageError('policy takes an action (set FILE, show, clear) and the state options');
    if (rest[0] === 'set' && rest.length === 2) validatePolicyFile(rest[1]!); // refuse a bad file before opening any store
  } else if (command === 'remove') {
    if (rest.length !== 1) throw new UsageError('remove takes one provider address: HOST/NS/TYPE (e.g. registry.terraform.io/hashicorp/random)');
    if (!values.version) throw new UsageError('remove needs --version X.Y.Z (one exact version)');
    if (values.platform || values.config || values['dry-run']) throw new UsageError('remove takes the address, --version, --json and the state options');
  } else if (command === 'import') {
    if (rest.length !== 1) throw new UsageError('import takes one directory');
    if (values.version || values.platform || values.config) throw new UsageError('import takes what the directory holds: no --version, --platform or --config');
  } else if (rest.length || values.version || values.platform || values.config || values['dry-run']) {
    throw new UsageError('list takes only --json and the state options');
  }
}

/** `list`: what the mirror holds, as text or --json. */
async function listCommand(store: StoreHandle, hostname: string, json: boolean | undefined): Promise<void> {
  const providers = await listMirroredProviders(store);
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ providers: providers.map((p) => ({ address: formatAddress(p.address), own: p.address.hostname === hostname, versions: p.versions })) })}\n`,
    );
  } else if (providers.length === 0) {
    say(`the mirror in ${store.description} holds no providers`);
  } else {
    for (const p of providers) {
      const own = p.address.hostname === hostname ? ' (published here)' : '';
      process.stdout.write(`${formatAddress(p.address)}${own}\n`);
      for (const v of p.versions) process.stdout.write(`  ${v.version}  ${v.platforms.join(' ')}\n`);
    }
  }
}

/** `sync` or `import`, then the audit entries and the summary; InputError (exit 1) when not everything was mirrored. */
async function syncOrImport(
  command: 'sync' | 'import',
  rest: readonly string[],
  values: Values,
  run: {
    store: StoreHandle;
    hostname: string;
    requests: SyncRequest[];
    policyHosts: Record<string, string>;
    concurrency: number;
    timeoutMs: number;
    retries: number;
  },
): Promise<void> {
  const { store, requests, policyHosts } = run;
  let summary: MirrorSummary;
  if (command === 'sync') {
    const credentials = terraformCredentials(process.env);
    const http = new UpstreamHttp({ timeoutMs: run.timeoutMs, retries: run.retries, tokenFor: credentials.tokenFor, log: say });
    say(`${values['dry-run'] ? 'dry run: ' : ''}syncing ${requests.length} provider${requests.length === 1 ? '' : 's'} into ${store.description}`);
    summary = await syncProviders(requests, {
      store,
      ownHostname: run.hostname,
      http,
      providersServiceFor: (host) => policyHosts[host] ?? credentials.providersServiceFor(host),
      dryRun: values['dry-run'],
      concurrency: run.concurrency,
      log: say,
    });
    const r = summary.upstream_requests!;
    say(`upstream requests: ${r.json} metadata, ${r.small} SHA256SUMS/signatures, ${r.archive} archives`);
  } else {
    summary = await importDirectory(rest[0]!, { store, ownHostname: run.hostname, dryRun: values['dry-run'], log: say });
  }
  if (!summary.dry_run) await recordMirrorAudit(store, values.remote, summary);
  if (values.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
  const versions = summary.providers.flatMap((p) => p.versions);
  const upToDate = versions.length > 0 && versions.every((v) => v.status === 'unchanged' || v.status === 'skipped');
  if (summary.ok && upToDate) say('up to date: nothing to download');
  if (!summary.ok) {
    const failed = summary.providers.filter((p) => p.status === 'failed').map((p) => p.address);
    throw new InputError(
      `not everything was mirrored (${failed.join(', ')}): see the reasons above; what verified is stored, run again after fixing the cause`,
    );
  }
}

/**
 * One audit entry per provider version a sync or import touched: `ok` when stored now, `unchanged`, or `failed` with
 * the reason (a provider that failed before any version, e.g. upstream unreachable, gets one entry of its own).
 */
async function recordMirrorAudit(store: StoreHandle, remote: boolean | undefined, summary: MirrorSummary): Promise<void> {
  const action = summary.command === 'sync' ? 'mirror.sync' : 'mirror.import';
  const outcome = { mirrored: 'ok', unchanged: 'unchanged', failed: 'failed' } as const;
  for (const provider of summary.providers) {
    if (provider.versions.length === 0 && provider.status === 'failed') {
      await recordAudit(store, remote, { action, target: provider.address, outcome: 'failed', ...(provider.reason ? { reason: provider.reason } : {}) });
    }
    for (const version of provider.versions) {
      if (version.status !== 'mirrored' && version.status !== 'unchanged' && version.status !== 'failed') continue;
      const digests = Object.fromEntries(version.platforms.filter((p) => p.zh).map((p) => [p.platform, p.zh!.replace(/^zh:/, '')]));
      await recordAudit(store, remote, {
        action,
        target: `${provider.address} ${version.version}`,
        outcome: outcome[version.status],
        ...(version.reason ? { reason: version.reason } : {}),
        ...(Object.keys(digests).length ? { digests } : {}),
      });
    }
  }
}
