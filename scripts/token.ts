/**
 * `npm run token -- …`: read tokens of a private registry.
 *
 *   create --namespace NS [--namespace NS2 …] [--expires 90d|2027-01-31|never] [--name ci]
 *       Creates a read token; prints it once, as the last line of stdout. NS is a
 *       namespace of this registry, "*" (everything), HOST/NS or HOST/* (a
 *       mirrored upstream namespace, e.g. registry.terraform.io/hashicorp).
 *       Tokens expire after 90 days unless --expires says otherwise ("never" explicitly).
 *   create --publish NS/TYPE|NS/NAME/SYSTEM [--publish …] [--expires 90d] [--name release]
 *       Creates a publish token: it publishes (and deprecates, withdraws) these
 *       packages of this registry through the write API (EDGE_REGISTRY_TOKEN
 *       for --registry) and reads nothing; '*' allowed in the type, name or
 *       system. --publish NS --namespace-wide: every package of NS, explicitly.
 *   list      Lists tokens: id, name, scopes, created, expires (never the token).
 *   revoke <id or name>   Deletes the token's record; refused everywhere within 60 s (docs/private.md).
 *
 * Options for every command:
 *   --remote          the deployed KV namespace (CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID;
 *                     create and revoke also R2_ACCESS_KEY_ID, R2_SECRET_ACCESS_KEY: the audit log is in R2)
 *                     instead of the local state `npm start` serves
 *   --env NAME        wrangler environment whose REGISTRY_KV to use (e.g. production)
 *   --config PATH     wrangler.toml (default ./wrangler.toml)
 *   --persist-to DIR  local state directory, like `wrangler dev --persist-to`
 *
 * Exit status: 0 on success, 1 for bad arguments or an unknown token, 2 for
 * other failures. Tokens are never logged; only their SHA-256 is stored.
 */
import { parseArgs } from 'node:util';
import { run, STATE_OPTIONS, UsageError } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import { type CommandStore, openCommandStore } from './lib/stores/open';
import type { RegistryConfig } from './lib/config';
import { audited } from './lib/audit';
import { tokenId, tokenSha256 } from '../src/access/tokens';
import { createToken, describeToken, formatTokenTable, listTokens, parseExpiry, revokeToken } from './lib/tokens';

const TOKEN_SHAPE = /^ert_[A-Za-z0-9_-]{43}$/;

const USAGE = `usage:
  npm run token -- create --namespace NS [--namespace NS2 | '*'] [--expires 90d] [--name ci] [--remote] [--env NAME]
  npm run token -- create --publish NS/TYPE [--publish NS/NAME/SYSTEM …] [--expires 90d] [--name release] [--remote] [--env NAME]
  npm run token -- create --publish NS [--publish NS2 | '*'] --namespace-wide [--expires 90d] [--name release] [--remote] [--env NAME]
  (--expires: a duration like 12h, 90d, 1y, a date, or never; default 90d)
  npm run token -- list [--remote] [--env NAME]
  npm run token -- revoke <id or name> [--remote] [--env NAME]`;

const OPTIONS = {
  namespace: { type: 'string', multiple: true, short: 'n' },
  publish: { type: 'string', multiple: true },
  'namespace-wide': { type: 'boolean' },
  expires: { type: 'string' },
  name: { type: 'string' },
  ...STATE_OPTIONS,
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values'];

/** What every command works on. */
interface Context {
  values: Values;
  config: RegistryConfig;
  store: CommandStore;
  /** create's --expires, parsed before the store opens (bad input changes nothing). */
  expires: string | null;
}

const COMMANDS = { create: createCommand, list: listCommand, revoke: revokeCommand } satisfies Record<
  string,
  (context: Context, rest: string[]) => Promise<void>
>;

type Command = keyof typeof COMMANDS;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: OPTIONS });
  const [command, ...rest] = positionals;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  checkArguments(command, rest, values);
  const expires = command === 'create' ? parseExpiry(values.expires) : null;
  const config = await readRegistryConfig({ configPath: values.config, env: values.env, persistTo: values['persist-to'] });
  const store = await openCommandStore(config, { remote: values.remote, readOnly: command === 'list' });
  try {
    await COMMANDS[command]({ values, config, store, expires }, rest);
  } finally {
    await store.close();
  }
}

/** One known command with its arguments, and only its options; UsageError naming the first that is not. */
function checkArguments(command: string | undefined, rest: string[], values: Values): asserts command is Command {
  if (command === undefined) throw new UsageError('give a command: create, list or revoke');
  if (!Object.hasOwn(COMMANDS, command)) throw new UsageError(`unknown command "${command}"`);
  if (command !== 'revoke' && rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  if (command === 'revoke' && rest.length !== 1) throw new UsageError('revoke takes one token id or name');
  if (command !== 'create' && (values.namespace || values.publish || values.expires || values.name !== undefined || values['namespace-wide'])) {
    throw new UsageError('--namespace, --publish, --namespace-wide, --expires and --name are options of create');
  }
  if (values.namespace && values.publish) {
    throw new UsageError('a token either reads (--namespace) or publishes (--publish), never both: create two tokens');
  }
}

/** `create`: a read or publish token, audited; prints it once, as the last line of stdout. */
async function createCommand({ values, config, store, expires }: Context): Promise<void> {
  const purpose = values.publish ? 'publish' : 'read';
  const { token, record } = await audited(
    store.audit,
    values.remote,
    { action: 'token.create', target: 'token (new)' },
    () =>
      createToken(store.kv, {
        scopes: (purpose === 'publish' ? values.publish : values.namespace) ?? [],
        name: values.name,
        expires,
        purpose,
        namespaceWide: values['namespace-wide'],
      }),
    ({ record: r }) => ({
      outcome: 'ok',
      target: `token ${r.id}`,
      namespaces: r.scopes,
      reason: `${r.purpose} token${r.name ? ` "${r.name}"` : ''}, ${describeToken(r)}, expires ${r.expires ?? 'never'}`,
    }),
  );
  const lines = [
    `created ${record.purpose} token ${record.id}${record.name ? ` (${record.name})` : ''} in ${store.description}`,
    record.purpose === 'publish' ? `  may:     ${describeToken(record)}` : `  scopes:  ${record.scopes.join(', ')}`,
    `  expires: ${record.expires ?? 'never'}`,
    record.purpose === 'publish'
      ? `Publish with it: EDGE_REGISTRY_TOKEN=… npm run publish-provider -- dist --namespace ${record.scopes[0] === '*' ? 'NS' : record.scopes[0]} --registry https://${config.hostname}. It is shown only this once:`
      : `Use it as credentials "${config.hostname}" { token = "…" } in the Terraform CLI configuration${
          config.hostname.includes(':') ? '' : `,\nor as the variable TF_TOKEN_${config.hostname.replace(/-/g, '__').replace(/\./g, '_')}`
        }. It is shown only this once:`,
    token,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** `list`: every token's id, name, scopes and dates (never the token), from KV only. */
async function listCommand({ store }: Context): Promise<void> {
  process.stdout.write(`${formatTokenTable(await listTokens(store.kv))}\n`);
}

/** `revoke ID|NAME|TOKEN`: deletes the record, audited; an unknown token is an InputError. */
async function revokeCommand({ values, store }: Context, rest: string[]): Promise<void> {
  // Given the token itself, revoke it by its id: the secret never reaches a message or the audit log.
  const which = TOKEN_SHAPE.test(rest[0]!.trim()) ? tokenId(tokenSha256(rest[0]!.trim())) : rest[0]!;
  const record = await audited(
    store.audit,
    values.remote,
    { action: 'token.revoke', target: `token ${which.slice(0, 100)}` },
    () => revokeToken(store.kv, which),
    (r) => ({ outcome: 'ok', target: `token ${r.id}`, namespaces: r.scopes, ...(r.name ? { reason: `name "${r.name}"` } : {}) }),
  );
  process.stdout.write(`revoked token ${record.id}${record.name ? ` (${record.name})` : ''} in ${store.description}\n`);
}

run(() => main(process.argv.slice(2)), USAGE);
