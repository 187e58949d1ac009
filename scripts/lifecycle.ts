/**
 * `npm run lifecycle -- deprecate|undeprecate|withdraw|restore|status ADDRESS [--version V] [--message "…"]`
 *
 * Deprecates or withdraws a provider's or module's versions (metadata beside
 * the immutable versions): see scripts/lib/lifecycle/run.ts and
 * src/store/lifecycle/.
 */
import { parseArgs } from 'node:util';
import { checkStateTarget, run, stateTarget, say, STATE_OPTIONS, UsageError } from './lib/cli';
import { LIFECYCLE_COMMANDS, runLifecycle, type LifecycleCommand, type LifecycleOutput } from './lib/lifecycle/run';

const USAGE = `usage: npm run lifecycle -- COMMAND ADDRESS [--version X.Y.Z] [--message "…"] [options]

  ADDRESS is NAMESPACE/TYPE (a provider of this registry) or NAMESPACE/NAME/SYSTEM (a module).

  deprecate   [--version V] --message M   mark the provider/module (or one version) deprecated; terraform init
                                           and tofu init print M (providers), the pages show it (both)
  undeprecate [--version V]               remove that deprecation
  withdraw    --version V --message M     take V out of the version lists, "newest" and the pages' default so
                                           constraints no longer select it; its files stay reachable
  restore     --version V                 offer a withdrawn version again
  status      [--version V]               show the versions and what is deprecated or withdrawn

  --remote, --env NAME     the KV namespace and R2 bucket of wrangler.toml (as publish-provider --remote)
  --config PATH            wrangler.toml (default ./wrangler.toml)
  --persist-to DIR         local state root (default .wrangler/state)
  --hostname HOST          registry hostname (default REGISTRY_HOSTNAME)
  --json                   print the result as one JSON object on stdout

Published bytes never change; these are metadata beside the version. Exit status: 0 done (also when it
already was so), 1 for input to fix (an unknown version, a missing message), 2 for usage.`;

run(async () => {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      ...STATE_OPTIONS,
      version: { type: 'string' },
      message: { type: 'string' },
      hostname: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  if (values.help) {
    say(USAGE);
    return;
  }
  const [command, address, ...rest] = positionals;
  if (!command || !(LIFECYCLE_COMMANDS as readonly string[]).includes(command)) {
    throw new UsageError(command ? `unknown command "${command}"` : `give a command: ${LIFECYCLE_COMMANDS.join(', ')}`);
  }
  if (!address || rest.length > 0) throw new UsageError('give exactly one address: NAMESPACE/TYPE or NAMESPACE/NAME/SYSTEM');
  checkStateTarget(values);
  if (command === 'status' && values.message !== undefined) throw new UsageError('status takes no --message');

  const output = await runLifecycle({
    command: command as LifecycleCommand,
    address,
    version: values.version,
    message: values.message,
    ...stateTarget(values),
    log: say,
  });
  describe(output);
  if (values.json) process.stdout.write(`${JSON.stringify(output)}\n`);
}, USAGE);

function describe(output: LifecycleOutput): void {
  const what = `${output.address}${output.version ? ` ${output.version}` : ''}`;
  if (output.status === 'unchanged') say(`${what}: already ${pastTense(output.command)}; nothing changed`);
  else if (output.status === 'changed') say(`${what}: ${pastTense(output.command)}; the version lists and pages are rebuilt`);
  const { lifecycle } = output;
  if (lifecycle.deprecated) say(`${output.address} is deprecated: ${lifecycle.deprecated.message}`);
  for (const version of output.versions) {
    const marks = lifecycle.versions[version];
    const notes = [
      marks?.withdrawn ? `withdrawn ${marks.withdrawn.at.slice(0, 10)}: ${marks.withdrawn.message}` : '',
      marks?.deprecated ? `deprecated: ${marks.deprecated.message}` : '',
    ].filter(Boolean);
    say(`  ${version}${notes.length ? `  ${notes.join('; ')}` : ''}`);
  }
}

function pastTense(command: LifecycleCommand): string {
  return { deprecate: 'deprecated', undeprecate: 'not deprecated', withdraw: 'withdrawn', restore: 'offered (not withdrawn)', status: '' }[command];
}
