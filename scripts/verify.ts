/**
 * `npm run verify -- HOST/NS/TYPE VERSION [--repository OWNER/REPO] [--workflow FILE.yml] [--registry URL]`
 * (or HOST/NS/NAME/SYSTEM for a module)
 *
 * Checks a release's signed build provenance as a consumer: the signature
 * against the registry's published attestation keys, the package address and
 * version it names, every subject against the files it serves (and
 * SHA256SUMS), the repository id the publisher rule is pinned to, and the
 * expected repository (name and id) and workflow (scripts/lib/provenance-verify.ts). A private registry: a read
 * token in $EDGE_REGISTRY_TOKEN.
 *
 * Exit status: 0 verified, 1 something did not match (the message names it)
 * or bad input, 2 bad arguments, 3 other failures.
 */
import { parseArgs } from 'node:util';
import { run, say, UsageError } from './lib/cli';
import { TOKEN_ENV } from './lib/ci-credentials';
import { verifyProvenance } from './lib/provenance-verify';

const USAGE = `usage: npm run verify -- HOST/NAMESPACE/TYPE VERSION [options]
       npm run verify -- HOST/NAMESPACE/NAME/SYSTEM VERSION [options]   (a module)

  --repository OWNER/REPO   the repository it must have been built from (GitLab: GROUP/PROJECT)
  --repository-id ID        that repository's numeric id (GitHub repository_id, GitLab project id): a
                            repository deleted and re-created, or renamed, under the name has another
  --accept-unbound          accept a statement that names no package address (signed before statements
                            did): checked by its files alone, with a warning
  --workflow FILE.yml       the workflow file that must have built it
  --registry URL            where the registry is served when not at https://HOST
  --json                    print the verified facts as JSON on stdout
  $${TOKEN_ENV}       a read token (private registries)`;

run(async () => {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      repository: { type: 'string' },
      'repository-id': { type: 'string' },
      'accept-unbound': { type: 'boolean' },
      workflow: { type: 'string' },
      registry: { type: 'string' },
      json: { type: 'boolean' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    say(USAGE);
    return;
  }
  if (positionals.length !== 2) throw new UsageError('expected the address and the version');
  const [address, version] = positionals as [string, string];
  const result = await verifyProvenance({
    address,
    version,
    repository: values.repository,
    repositoryId: values['repository-id'],
    acceptUnbound: values['accept-unbound'],
    workflow: values.workflow,
    registry: values.registry,
    token: process.env[TOKEN_ENV] || undefined,
    log: say,
  });
  say(
    `verified: ${address} ${version} was built from ${result.repository} (id ${result.repositoryId})@${result.commit.slice(0, 12)} ` +
      `by ${result.workflow} at ${result.ref}, ${result.invocation}`,
  );
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
}, USAGE);
