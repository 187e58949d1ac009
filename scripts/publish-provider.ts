/**
 * `npm run publish-provider -- DIST_OR_FILES… --namespace NS [options]`
 *
 * Publishes one provider version (a goreleaser dist/, release files, or
 * --binary executables) through the registry Worker's publish API: served
 * in-process on the local state `npm start` serves, or with --registry URL a
 * deployed registry's. See scripts/lib/provider/publish.ts for the function API.
 */
import { parseArgs } from 'node:util';
import { checkStateTarget, run, stateTarget, say, SIGNING_STATE_OPTIONS, UsageError } from './lib/cli';
import { publishRelease } from './lib/provider/publish';
import { timing } from './lib/timing';

const USAGE = `usage: npm run publish-provider -- [DIST_DIR|FILE…] --namespace NS [options]

  DIST_DIR|FILE           goreleaser dist/ or files: terraform-provider-TYPE_VERSION_OS_ARCH.zip,
                          …_manifest.json, …_SHA256SUMS, …_SHA256SUMS.sig; the protocols come from the
                          manifest, else terraform-registry-manifest.json in or beside DIST_DIR (goreleaser)
  --namespace NS          namespace to publish under (required)
  --binary OS_ARCH=PATH   zip a raw provider executable for that platform (repeatable)
  --type TYPE             provider type (default: from the file names)
  --version VERSION       version (default: from the file names)
  --key-file PATH         armored private signing key (else $EDGE_REGISTRY_SIGNING_KEY,
                          passphrase in $EDGE_REGISTRY_SIGNING_KEY_PASSPHRASE)
  --registry URL          publish through the registry's publish API (no Cloudflare credentials): a publish
                          token in $EDGE_REGISTRY_TOKEN, or the CI job's OIDC identity (GitHub Actions
                          id-token: write; GitLab id_tokens as $EDGE_REGISTRY_ID_TOKEN); the registry signs
                          with its namespace key unless --key-file or a .sig is given
  --config PATH           wrangler.toml (default ./wrangler.toml)
  --persist-to DIR        local state root, as wrangler dev --persist-to (default .wrangler/state)
  --hostname HOST         registry hostname (default REGISTRY_HOSTNAME of wrangler.toml)
  --keys-dir DIR           where local mode keeps generated keys (default .keys)
  --docs FILE             docs for the version's pages: a Provider Code Specification JSON or
                          the output of terraform providers schema -json (validated first)
  --dry-run               validate and print the plan; write nothing
  --json                  print the result as one JSON object on stdout`;

run(async () => {
  timing('script running');
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      ...SIGNING_STATE_OPTIONS,
      namespace: { type: 'string' },
      binary: { type: 'string', multiple: true },
      type: { type: 'string' },
      version: { type: 'string' },
      'dry-run': { type: 'boolean' },
      docs: { type: 'string' },
      registry: { type: 'string' },
    },
  });
  if (values.help) {
    say(USAGE);
    return;
  }
  if (!values.namespace) throw new UsageError('--namespace is required');
  if (positionals.length === 0 && !values.binary?.length) throw new UsageError('give a dist/ directory, release files or --binary OS_ARCH=PATH');
  checkStateTarget(values);

  const result = await publishRelease({
    paths: positionals,
    binaries: values.binary,
    namespace: values.namespace,
    type: values.type,
    version: values.version,
    keyFile: values['key-file'],
    ...stateTarget(values),
    keysDir: values['keys-dir'],
    dryRun: values['dry-run'],
    docs: values.docs,
    registry: values.registry,
    log: say,
  });
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
}, USAGE);
