/**
 * `npm run audit -- [--since 7d] [--namespace NS] [--outcome O] [--after CURSOR] [--limit N] [--json] [--remote] [--env NAME]`
 *
 * Lists the audit log: every write by any path (CLI, write API, pages), who
 * did it, and how it ended, oldest first. Entries are R2 objects created
 * only if absent and never rewritten (src/store/audit/). One run reads at
 * most --limit entry objects (default and ceiling MAX_AUDIT_READS); when it
 * stops before the end it prints the command for the next page (--after).
 * Every field is printed through printable() (control characters escaped).
 */
import { parseArgs } from 'node:util';
import { AuditCursorError, listAuditEntries, MAX_AUDIT_READS } from '../src/store/audit/read';
import { printable } from '../src/store/audit/display';
import type { AuditOutcome } from '../src/store/audit/entry';
import { InputError } from '../src/protocol/errors';
import { parseModuleName } from '../src/protocol/modules-v1';
import { run, say, STATE_OPTIONS } from './lib/cli';
import { formatAuditLines, parseSince } from './lib/audit';
import { readRegistryConfig } from './lib/config';
import { openStore } from './lib/stores/open';

const OUTCOMES: readonly AuditOutcome[] = ['ok', 'unchanged', 'refused', 'failed'];

const USAGE = `usage: npm run audit -- [--since 7d|2026-11-01] [--namespace NS] [--outcome O] [--after CURSOR] [--limit N] [--json] [--remote] [--env NAME]

  --since WHEN      only entries since a duration ago (30m, 12h, 7d, 4w) or a date/time
  --namespace NS    only entries concerning namespace NS
  --outcome O       only entries that ended O (ok, unchanged, refused, failed)
  --after CURSOR    the next page: the cursor the previous run printed
  --limit N         read at most N entry objects (1-${MAX_AUDIT_READS}, default ${MAX_AUDIT_READS}); the rest is the next page
  --json            one JSON object on stdout: {"entries": [...], "damaged": [keys], "next": CURSOR or null}
  --remote          the deployed R2 bucket ($R2_ACCESS_KEY_ID, $R2_SECRET_ACCESS_KEY, $CLOUDFLARE_ACCOUNT_ID,
                    $CLOUDFLARE_API_TOKEN); --env NAME picks wrangler.toml's environment`;

run(async () => {
  const { values, positionals } = parseArgs({
    allowPositionals: false,
    options: {
      ...STATE_OPTIONS,
      since: { type: 'string' },
      namespace: { type: 'string' },
      outcome: { type: 'string' },
      after: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  void positionals;
  if (values.help) {
    say(USAGE);
    return;
  }
  const since = values.since === undefined ? undefined : parseSince(values.since);
  const namespace = values.namespace === undefined ? undefined : parseModuleName(values.namespace, 'namespace');
  if (values.outcome !== undefined && !OUTCOMES.includes(values.outcome as AuditOutcome))
    throw new InputError(`--outcome must be one of ${OUTCOMES.join(', ')}, not "${printable(values.outcome)}"`);
  const outcome = values.outcome as AuditOutcome | undefined;
  const limit = values.limit === undefined ? MAX_AUDIT_READS : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_READS)
    throw new InputError(`--limit must be a whole number from 1 to ${MAX_AUDIT_READS}, not "${printable(values.limit ?? '')}"`);
  const config = await readRegistryConfig({ configPath: values.config, env: values.env, persistTo: values['persist-to'] });
  const store = await openStore(config, { remote: values.remote });
  try {
    let listing: Awaited<ReturnType<typeof listAuditEntries>>;
    try {
      listing = await listAuditEntries(store, { since, namespace, outcome, maxReads: limit, ...(values.after ? { cursor: values.after } : {}) });
    } catch (error) {
      if (error instanceof AuditCursorError) throw new InputError(`--after: ${error.message}`);
      throw error;
    }
    const { entries, damaged, next } = listing;
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ entries, damaged, next })}\n`);
    } else {
      process.stdout.write(`${formatAuditLines(entries)}\n`);
    }
    for (const key of damaged) say(`warning: ${printable(key)} in ${store.description} is not an audit entry; left as is`);
    if (next !== null) {
      const again = process.argv.slice(2).filter((arg, i, all) => arg !== '--after' && all[i - 1] !== '--after' && !arg.startsWith('--after='));
      say(
        `more entries (${listing.read} read, the most one run reads is --limit ${limit}): npm run audit -- ${again.map(printable).join(' ')} --after ${next}`,
      );
    }
  } finally {
    await store.close();
  }
}, USAGE);
