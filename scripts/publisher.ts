/**
 * `npm run publisher -- add|pin|list|remove|require-provenance --namespace NS [options]`
 *
 * Trusted publishers: the CI jobs allowed to publish into a namespace with
 * their own short-lived OpenID Connect ID token and no stored secret
 * (`publish-provider --registry URL` in GitHub Actions or GitLab CI), each
 * only the packages named for it. Stored in the registry's R2 (local state,
 * or --remote), changed by conditional writes; the Worker matches each CI
 * token against them.
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
import { addPublisher, formatPublishers, listPublishers, pinPublisher, removePublisher } from './lib/publishers';
import type { Store } from '../src/store/store';

const USAGE = `usage: npm run publisher -- COMMAND --namespace NS [options]

  add --issuer URL (--repository OWNER/REPO | --project-path GROUP/PROJECT)
      (--ref 'refs/tags/v*' | --environment NAME | --any-ref) [ids] [--api URL]
      (--package NS/TYPE | --package NS/NAME/SYSTEM ... | --namespace-wide)
        trust a CI job to publish (and deprecate, withdraw) the packages named, in NS:
        --package is repeatable, '*' allowed in the type, name or system (acme/thing-*);
        --namespace-wide trusts it with every package of NS, and says so in list and the audit;
        adding a publisher that is already trusted sets its packages to the ones given
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
  pin ID [ids | --api URL] [--workflow FILE] [--ref … | --environment … | --any-ref] [--package … | --namespace-wide]
        complete a publisher stored before ids, workflows, refs and packages were required: it publishes
        nothing until pinned (list says what it lacks); its ids are looked up as for add when not given
  list [--json]
        the namespace's trusted publishers, with their packages
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
  package: { type: 'string', multiple: true },
  'namespace-wide': { type: 'boolean' },
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
  'package',
  'namespace-wide',
] as const;

/** The options `pin` takes: add's but the identity itself (what a stored publisher may lack, and where its ids are looked up). */
const PIN_OPTIONS = new Set<string>(ADD_OPTIONS.filter((name) => !['issuer', 'repository', 'project-path', 'allow-unprotected-ref'].includes(name)));

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
  pin: pinCommand,
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
  // Every command opens R2 too: the publishers are stored there (list reads them from it).
  const store = await openCommandStore(config, { remote: values.remote, readOnly: false });
  try {
    await COMMANDS[command]({ values, hostname, namespace, target: `${hostname}/${namespace}`, store }, rest);
  } finally {
    await store.close();
  }
}, USAGE);

/** One known command with its arguments, and only its options; UsageError (exit 2) naming the first that is not. */
function checkArguments(command: string | undefined, rest: string[], values: Values): asserts command is Command {
  if (!command || !Object.hasOwn(COMMANDS, command)) throw new UsageError('expected one command: add, pin, list, remove or require-provenance');
  if (values.off && command !== 'require-provenance') throw new UsageError('--off is an option of require-provenance');
  const takesId = command === 'remove' || command === 'pin';
  if (takesId ? rest.length !== 1 : rest.length > 0) {
    throw new UsageError(takesId ? `${command} takes one publisher id (npm run publisher -- list prints them)` : `unexpected argument "${rest[0]}"`);
  }
  if (command !== 'add') {
    const given = ADD_OPTIONS.filter((name) => values[name] !== undefined && !(command === 'pin' && PIN_OPTIONS.has(name)));
    if (given.length) throw new UsageError(`--${given[0]} is an option of add`);
  }
  if (!values.namespace) throw new UsageError('--namespace is required');
}

/** What add and pin are given, as parsePublisherInput takes it. */
function publisherInput(values: Values) {
  return {
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
    packages: values.package,
    namespaceWide: values['namespace-wide'],
  };
}

/** `add`: trusts a CI job with the packages named (pinned to its repository's ids, given or looked up), audited; already trusted is `unchanged` or its packages `updated`. */
async function addCommand({ values, hostname, namespace, target, store }: Context): Promise<void> {
  const lookup = { api: values.api, env: process.env };
  const { publisher, added, updated } = await audited(
    store.audit,
    values.remote,
    { action: 'publisher.add', target },
    () => addPublisher(storeOf(store), hostname, namespace, publisherInput(values), lookup),
    (result) => ({ outcome: result.added || result.updated ? 'ok' : 'unchanged', reason: describePublisher(result.publisher).replace(/\s+/g, ' ') }),
  );
  say(
    added
      ? `trusted publisher added to ${target} in ${store.description}:`
      : updated
        ? `${target} already trusts this publisher; its packages are now the ones given:`
        : `${target} already trusts this publisher:`,
  );
  say(`  ${describePublisher(publisher)}`);
  if (added || updated) say('  CI jobs it matches can now publish those packages with `--registry URL` and their ID token, from the next request on');
  if (values.json) process.stdout.write(`${JSON.stringify({ publisher, added, updated })}\n`);
}

/** `pin ID`: completes a publisher stored before ids, workflows, refs and packages were required (it publishes nothing until then), audited. */
async function pinCommand({ values, hostname, namespace, target, store }: Context, rest: string[]): Promise<void> {
  const lookup = { api: values.api, env: process.env };
  const { before, publisher } = await audited(
    store.audit,
    values.remote,
    { action: 'publisher.pin', target, reason: `publisher ${rest[0]!}` },
    () => pinPublisher(storeOf(store), hostname, namespace, rest[0]!, publisherInput(values), lookup),
    (result) => ({ outcome: 'ok', reason: `${result.before.id} pinned as ${describePublisher(result.publisher).replace(/\s+/g, ' ')}` }),
  );
  say(`pinned trusted publisher ${before.id} of ${target} in ${store.description}; it is now:`);
  say(`  ${describePublisher(publisher)}`);
  if (values.json) process.stdout.write(`${JSON.stringify({ before, publisher })}\n`);
}

/** The KV and R2 of an operator command that writes (every publisher command opens both). */
function storeOf(store: CommandStore): Store {
  if (!store.blobs) throw new Error("the publisher commands need the registry's R2 bucket");
  return { kv: store.kv, blobs: store.blobs };
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

/** `list`: the namespace's trusted publishers with their packages (and what an unpinned one lacks). */
async function listCommand({ values, hostname, namespace, target, store }: Context): Promise<void> {
  const publishers = await listPublishers(storeOf(store), hostname, namespace);
  if (values.json) process.stdout.write(`${JSON.stringify({ namespace: target, publishers })}\n`);
  else process.stdout.write(`${formatPublishers(hostname, namespace, publishers)}\n`);
}

/** `remove ID`: stops trusting a publisher, audited; an unknown id is an InputError (exit 1). */
async function removeCommand({ values, hostname, namespace, target, store }: Context, rest: string[]): Promise<void> {
  const removed = await audited(
    store.audit,
    values.remote,
    { action: 'publisher.remove', target, reason: `publisher ${rest[0]!}` },
    () => removePublisher(storeOf(store), hostname, namespace, rest[0]!),
    (result) => ({ outcome: 'ok', reason: describePublisher(result).replace(/\s+/g, ' ') }),
  );
  say(`removed trusted publisher ${removed.id} from ${target} in ${store.description}`);
  if (values.json) process.stdout.write(`${JSON.stringify({ removed })}\n`);
}
