/**
 * `npm run audit -- [--since 7d] [--namespace NS] [--json] [--remote] [--env NAME]`
 *
 * Lists the audit log: every write by any path (CLI, write API, pages), who
 * did it, and how it ended, oldest first. Entries are R2 objects created
 * only if absent and never rewritten (src/store/audit/).
 */
import { parseArgs } from 'node:util';
import { listAuditEntries } from '../src/store/audit/read';
import { parseModuleName } from '../src/protocol/modules-v1';
import { run, say, STATE_OPTIONS } from './lib/cli';
import { formatAuditLines, parseSince } from './lib/audit';
import { readRegistryConfig } from './lib/config';
import { openStore } from './lib/stores/open';

const USAGE = `usage: npm run audit -- [--since 7d|2026-11-01] [--namespace NS] [--json] [--remote] [--env NAME]

  --since WHEN      only entries since a duration ago (30m, 12h, 7d, 4w) or a date/time
  --namespace NS    only entries concerning namespace NS
  --json            one JSON object on stdout: {"entries": [...], "damaged": [keys]}
  --remote          the deployed R2 bucket ($R2_ACCESS_KEY_ID, $R2_SECRET_ACCESS_KEY, $CLOUDFLARE_ACCOUNT_ID,
                    $CLOUDFLARE_API_TOKEN); --env NAME picks wrangler.toml's environment`;

run(async () => {
  const { values, positionals } = parseArgs({
    allowPositionals: false,
    options: { ...STATE_OPTIONS, since: { type: 'string' }, namespace: { type: 'string' }, json: { type: 'boolean' } },
  });
  void positionals;
  if (values.help) {
    say(USAGE);
    return;
  }
  const since = values.since === undefined ? undefined : parseSince(values.since);
  const namespace = values.namespace === undefined ? undefined : parseModuleName(values.namespace, 'namespace');
  const config = await readRegistryConfig({ configPath: values.config, env: values.env, persistTo: values['persist-to'] });
  const store = await openStore(config, { remote: values.remote });
  try {
    const { entries, damaged } = await listAuditEntries(store, { since, namespace });
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ entries, damaged })}\n`);
    } else {
      process.stdout.write(`${formatAuditLines(entries)}\n`);
    }
    for (const key of damaged) say(`warning: ${key} in ${store.description} is not an audit entry; left as is`);
  } finally {
    await store.close();
  }
}, USAGE);
