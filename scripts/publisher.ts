/**
 * `npm run publisher -- add|list|remove|require-provenance --namespace NS [options]`
 *
 * Trusted publishers: the CI jobs allowed to publish into a namespace with
 * their own short-lived OpenID Connect ID token and no stored secret
 * (`publish-provider --registry URL` in GitHub Actions or GitLab CI). Stored
 * in the registry's KV (local state, or --remote); the Worker matches each
 * CI token against them.
 *
 * Exit status: 0 on success, 1 for bad input or an unknown publisher, 2 for
 * bad arguments, 3 for other failures.
 */
import { parseArgs } from 'node:util';
import { parseHostname, parseProviderName } from '../src/protocol/index';
import { describePublisher, GITHUB_ISSUER } from '../src/access/publishers';
import { run, say, STATE_OPTIONS, UsageError } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import { type CommandStore, openCommandStore } from './lib/stores/open';
import { audited } from './lib/audit';
import { setProvenanceRequired } from '../src/store/provenance';
import { addPublisher, formatPublishers, listPublishers, removePublisher } from './lib/publishers';

const USAGE = `usage: npm run publisher -- COMMAND --namespace NS [options]

  add --issuer URL (--repository OWNER/REPO | --project-path GROUP/PROJECT)
      (--ref 'refs/tags/v*' | --environment NAME | --any-ref) [ids] [--api URL]
        trust a CI job to publish into NS:
          GitHub Actions: --issuer ${GITHUB_ISSUER} --repository OWNER/REPO
                          --workflow release.yml  (.github/workflows/release.yml, required;
                          a reusable workflow of another repository: OWNER/REPO/.github/workflows/FILE.yml[@REF])
                          [--repository-id N --owner-id N]
          GitLab CI:      --issuer https://gitlab.com --project-path GROUP/PROJECT
                          [--project-id N --namespace-id N] [--allow-unprotected-ref]
        --ref is a full git ref, '*' matching anything; --environment the job's deployment environment;
        one of them is required unless --any-ref. The publisher is pinned to the repository's (project's)
        immutable ids: given, or looked up from --api (default https://api.github.com, https://HOST/api/v3
        for GitHub Enterprise Server, the GitLab instance's /api/v4; GITHUB_TOKEN / GITLAB_TOKEN for private
        ones). GitLab jobs must run on a protected branch or tag unless --allow-unprotected-ref.
  list [--json]
        the namespace's trusted publishers
  remove ID
        stop trusting a publisher (ID as list prints it)
  require-provenance [--off]
        NS accepts only releases with build provenance: any publish not from a trusted
        publisher (publish tokens, the CLI) is refused; --off accepts them again (docs/provenance.md)

  --remote, --env NAME     the KV namespace of wrangler.toml (needs $CLOUDFLARE_ACCOUNT_ID, $CLOUDFLARE_API_TOKEN)
  --config PATH            wrangler.toml (default ./wrangler.toml)
  --persist-to DIR         local state root (default .wrangler/state)
  --hostname HOST          registry hostname (default REGISTRY_HOSTNAME)
  --json                   print the result as JSON on stdout`;

const OPTIONS = {
  ...STATE_OPTIONS,
  namespace: { type: 'string' },
  hostname: { type: 'string' },
  json: { type: 'boolean' },
  issuer: { type: 'string' },
  repository: { type: 'string' },
  'project-path': { type: 'string' },
  workflow: { type: 'string' },
  ref: { type: 'string' },
  environment: { type: 'string' },
  'repository-id': { type: 'string' },
  'owner-id': { type: 'string' },
  'project-id': { type: 'string' },
  'namespace-id': { type: 'string' },
  'any-ref': { type: 'boolean' },
  'allow-unprotected-ref': { type: 'boolean' },
  api: { type: 'string' },
  off: { type: 'boolean' },
} as const;

/** The options only `add` takes (what a publisher matches, and where its ids are looked up). */
const ADD_OPTIONS = [
  'issuer',
  'repository',
  'project-path',
  'workflow',
  'ref',
  'environment',
  'repository-id',
  'owner-id',
  'project-id',
  'namespace-id',
  'any-ref',
  'allow-unprotected-ref',
  'api',
] as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** What every command works on: the parsed options, the namespace, and the store opened for it. */
interface Context {
  values: Values;
  hostname: string;
  namespace: string;
  /** HOST/NS, as audit entries name it. */
  target: string;
  store: CommandStore;
}

const COMMANDS = {
  add: addCommand,
  list: listCommand,
  remove: removeCommand,
  'require-provenance': requireProvenanceCommand,
} satisfies Record<string, (context: Context, rest: string[]) => Promise<void>>;

type Command = keyof typeof COMMANDS;

run(async () => {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: OPTIONS });
  if (values.help) {
    say(USAGE);
    return;
  }
  const [command, ...rest] = positionals;
  checkArguments(command, rest, values);
  const namespace = parseProviderName(values.namespace!, 'namespace');
  const config = await readRegistryConfig({ configPath: values.config, env: values.env, persistTo: values['persist-to'] });
  const hostname = values.hostname ? parseHostname(values.hostname) : config.hostname;
  const store = await openCommandStore(config, { remote: values.remote, readOnly: command === 'list' });
  try {
    await COMMANDS[command]({ values, hostname, namespace, target: `${hostname}/${namespace}`, store }, rest);
  } finally {
    await store.close();
  }
}, USAGE);

/** One known command with its arguments, and only its options; UsageError (exit 2) naming the first that is not. */
function checkArguments(command: string | undefined, rest: string[], values: Values): asserts command is Command {
  if (!command || !Object.hasOwn(COMMANDS, command)) throw new UsageError('expected one command: add, list, remove or require-provenance');
  if (values.off && command !== 'require-provenance') throw new UsageError('--off is an option of require-provenance');
  if (command === 'remove' ? rest.length !== 1 : rest.length > 0) {
    throw new UsageError(command === 'remove' ? 'remove takes one publisher id (npm run publisher -- list prints them)' : `unexpected argument "${rest[0]}"`);
  }
  if (command !== 'add') {
    const given = ADD_OPTIONS.filter((name) => values[name] !== undefined);
    if (given.length) throw new UsageError(`--${given[0]} is an option of add`);
  }
  if (!values.namespace) throw new UsageError('--namespace is required');
}

/** `add`: trusts a CI job (pinned to its repository's ids, given or looked up), audited; already trusted is `unchanged`. */
async function addCommand({ values, hostname, namespace, target, store }: Context): Promise<void> {
  const input = {
    issuer: values.issuer,
    repository: values.repository,
    projectPath: values['project-path'],
    workflow: values.workflow,
    ref: values.ref,
    environment: values.environment,
    repositoryId: values['repository-id'],
    ownerId: values['owner-id'],
    projectId: values['project-id'],
    namespaceId: values['namespace-id'],
    anyRef: values['any-ref'],
    allowUnprotectedRef: values['allow-unprotected-ref'],
  };
  const lookup = { api: values.api, env: process.env };
  const { publisher, added } = await audited(
    store.audit,
    values.remote,
    { action: 'publisher.add', target },
    () => addPublisher(store.kv, hostname, namespace, input, lookup),
    (result) => ({ outcome: result.added ? 'ok' : 'unchanged', reason: describePublisher(result.publisher).replace(/\s+/g, ' ') }),
  );
  say(added ? `trusted publisher added to ${target} in ${store.description}:` : `${target} already trusts this publisher:`);
  say(`  ${describePublisher(publisher)}`);
  if (added) say('  CI jobs it matches can now publish with `--registry URL` and their ID token (production KV takes up to 60 s to propagate)');
  if (values.json) process.stdout.write(`${JSON.stringify({ publisher, added })}\n`);
}

/** `require-provenance [--off]`: its own R2 object, not part of the publisher records (src/store/provenance.ts); audited. */
async function requireProvenanceCommand({ values, hostname, namespace, target, store }: Context): Promise<void> {
  const required = !values.off;
  await audited(
    store.audit,
    values.remote,
    { action: 'publisher.require-provenance', target, reason: required ? 'on' : 'off' },
    () => setProvenanceRequired(store.blobs!, hostname, namespace, required),
    () => ({ outcome: 'ok', reason: required ? 'on' : 'off' }),
  );
  say(
    required
      ? `${target} now requires build provenance: only trusted publishers (CI jobs) may publish into it`
      : `${target} no longer requires build provenance`,
  );
  if (values.json) process.stdout.write(`${JSON.stringify({ namespace: target, requireProvenance: required })}\n`);
}

/** `list`: the namespace's trusted publishers, from KV only. */
async function listCommand({ values, hostname, namespace, target, store }: Context): Promise<void> {
  const publishers = await listPublishers(store.kv, hostname, namespace);
  if (values.json) process.stdout.write(`${JSON.stringify({ namespace: target, publishers })}\n`);
  else process.stdout.write(`${formatPublishers(hostname, namespace, publishers)}\n`);
}

/** `remove ID`: stops trusting a publisher, audited; an unknown id is an InputError (exit 1). */
async function removeCommand({ values, hostname, namespace, target, store }: Context, rest: string[]): Promise<void> {
  const removed = await audited(
    store.audit,
    values.remote,
    { action: 'publisher.remove', target, reason: `publisher ${rest[0]!}` },
    () => removePublisher(store.kv, hostname, namespace, rest[0]!),
    (result) => ({ outcome: 'ok', reason: describePublisher(result).replace(/\s+/g, ' ') }),
  );
  say(`removed trusted publisher ${removed.id} from ${target} in ${store.description}`);
  if (values.json) process.stdout.write(`${JSON.stringify({ removed })}\n`);
}
