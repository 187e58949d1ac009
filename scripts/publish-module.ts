/**
 * `npm run publish-module -- DIR_OR_PACKAGE --namespace NS --name NAME --system SYSTEM --version X.Y.Z [options]`
 *
 * Publishes one module version (a directory, packed deterministically, or a
 * .tar.gz/.zip package) through the registry Worker's publish API: served
 * in-process on the local state `npm start` serves, or with --registry URL a
 * deployed registry's. See scripts/lib/module/publish.ts for the function API.
 */
import { parseArgs } from 'node:util';
import { checkStateTarget, run, stateTarget, say, STATE_OPTIONS, UsageError } from './lib/cli';
import { DEFAULT_MAX_MB, publishModule } from './lib/module/publish';

const USAGE = `usage: npm run publish-module -- DIR|PACKAGE --namespace NS --name NAME --system SYSTEM --version VERSION [options]

  DIR|PACKAGE            the module's directory (packed into a deterministic .tar.gz), or a .tar.gz/.tgz/.zip
  --namespace NS         namespace (letters, digits, dashes, underscores)
  --name NAME            module name (e.g. vpc)
  --system SYSTEM        target system, the address's last part (e.g. aws)
  --version VERSION      strict semantic version (1.2.3, 1.2.3-beta.1)
  --max-size MB          refuse packages over this size (default ${DEFAULT_MAX_MB})
  --registry URL         publish through the registry's publish API (no Cloudflare credentials): a publish
                         token in $EDGE_REGISTRY_TOKEN, or the CI job's OIDC identity
  --config PATH          wrangler.toml (default ./wrangler.toml)
  --persist-to DIR       local state root, as wrangler dev --persist-to (default .wrangler/state)
  --hostname HOST        registry hostname (default REGISTRY_HOSTNAME of wrangler.toml)
  --dry-run              validate and print the plan; write nothing
  --json                 print the result as one JSON object on stdout`;

run(async () => {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      ...STATE_OPTIONS,
      namespace: { type: 'string' },
      name: { type: 'string' },
      system: { type: 'string' },
      version: { type: 'string' },
      'max-size': { type: 'string' },
      hostname: { type: 'string' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
      registry: { type: 'string' },
    },
  });
  if (values.help) {
    say(USAGE);
    return;
  }
  // Every missing part at once, not one per run.
  const missing = (['namespace', 'name', 'system', 'version'] as const).filter((option) => !values[option]).map((option) => `--${option}`);
  if (positionals.length !== 1) missing.unshift(positionals.length === 0 ? 'the module directory or package' : 'exactly one module directory or package');
  if (missing.length > 0)
    throw new UsageError(
      `${missing.length === 1 ? missing[0] : `${missing.slice(0, -1).join(', ')} and ${missing.at(-1)}`} ${missing.length === 1 ? 'is' : 'are'} required`,
    );
  checkStateTarget(values);
  const maxMB = values['max-size'] === undefined ? undefined : Number(values['max-size']);
  if (maxMB !== undefined && !(maxMB > 0)) throw new UsageError(`--max-size takes a positive number of MB, not "${values['max-size']}"`);

  const result = await publishModule({
    path: positionals[0]!,
    namespace: values.namespace!,
    name: values.name!,
    system: values.system!,
    version: values.version!,
    maxMB,
    ...stateTarget(values),
    dryRun: values['dry-run'],
    registry: values.registry,
    log: say,
  });
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
}, USAGE);
