#!/usr/bin/env node
// A stand-in `wrangler` for the deploy tests (there is no Cloudflare account here): it keeps an
// account's KV namespaces, R2 buckets, Worker and secrets in a JSON file ($FAKE_WRANGLER_STATE),
// answers in wrangler 4.86's formats (the recordings in ./recorded/), and appends every
// invocation to $FAKE_WRANGLER_LOG. $FAKE_WRANGLER_FAIL names a command ("r2 bucket create")
// that fails the way wrangler fails.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const recorded = (name) => readFileSync(join(import.meta.dirname, 'recorded', name), 'utf8');
const args = process.argv.slice(2);
const statePath = process.env.FAKE_WRANGLER_STATE;
const state = JSON.parse(readFileSync(statePath, 'utf8'));
const save = () => writeFileSync(statePath, JSON.stringify(state, null, 2));
const stdin = () => {
  try {
    return readFileSync(0, 'utf8');
  } catch {
    return '';
  }
};
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const firstOption = args.findIndex((a) => a.startsWith('-'));
const command = (firstOption < 0 ? args : args.slice(0, firstOption)).slice(0, 3).join(' ');
// `r2 bucket lifecycle list|add BUCKET [NAME PREFIX]`: positionals after the first three (a prefix starts with a dot, not a dash).
appendFileSync(process.env.FAKE_WRANGLER_LOG, `${JSON.stringify(args)}\n`);

const out = (text) => process.stdout.write(text);
const banner = '\n ⛅️ wrangler 4.86.0\n───────────────────\n';
function apiError(path, message, code) {
  process.stderr.write(
    `\n\u001b[31m✘ \u001b[41;31m[\u001b[41;97mERROR\u001b[41;31m]\u001b[0m \u001b[1mA request to the Cloudflare API (${path}) failed.\u001b[0m\n\n  ${message} [code: ${code}]\n\n`,
  );
  process.exit(1);
}
const account = '/accounts/0123456789abcdef0123456789abcdef';

if (args[0] === 'whoami') {
  if (!state.loggedIn) {
    out(recorded('whoami-logged-out.stdout'));
    process.exit(1);
  }
  out(recorded('whoami.stdout'));
} else if (process.env.FAKE_WRANGLER_FAIL && command.startsWith(process.env.FAKE_WRANGLER_FAIL)) {
  if (command.startsWith('r2')) apiError(`${account}/r2/buckets`, 'Please enable R2 through the Cloudflare Dashboard.', 10042);
  apiError(account, 'Authentication error', 10000);
} else if (command === 'kv namespace list') {
  out(
    JSON.stringify(
      state.kv.map(({ id, title }) => ({ id, title, supports_url_encoding: true })),
      null,
      '  ',
    ) + '\n',
  );
} else if (command === 'kv namespace create') {
  const title = args[3];
  const id = [...Array(32)].map((_, i) => '0123456789abcdef'[(i * 7 + state.kv.length * 3 + title.length) % 16]).join('');
  state.kv.push({ id, title });
  save();
  out(
    `${banner}Resource location: remote \n\n🌀 Creating namespace with title "${title}"\n✨ Success!\nTo access your new KV Namespace in your Worker, add the following snippet to your configuration file:\n[[kv_namespaces]]\nbinding = "${title.replace(/-/g, '_')}"\nid = "${id}"\n\n`,
  );
} else if (command === 'r2 bucket list') {
  out(`${banner}Listing buckets...\n${state.buckets.map((name) => `name:           ${name}\ncreation_date:  2026-03-02T10:11:12.345Z`).join('\n\n')}\n`);
} else if (command === 'r2 bucket create') {
  state.buckets.push(args[3]);
  save();
  out(`${banner}Creating bucket '${args[3]}'...\n✅ Created bucket '${args[3]}' with default storage class of Standard.\n`);
} else if (command === 'r2 bucket lifecycle' && args[3] === 'list') {
  // wrangler 4.86's format (recorded/r2-lifecycle-list.stdout; "There are no …" is its line for none).
  const rules = state.lifecycle?.[args[4]] ?? [];
  out(
    `${banner}Listing lifecycle rules for bucket '${args[4]}'...\n${
      rules.length === 0
        ? `There are no lifecycle rules for bucket '${args[4]}'.`
        : rules
            .map(
              (r) =>
                `name:     ${r.name}\nenabled:  Yes\nprefix:   ${r.prefix || '(all prefixes)'}\naction:   Expire objects after ${r.expireDays} days${r.abortMultipartDays ? `, Abort incomplete multipart uploads after ${r.abortMultipartDays} days` : ''}`,
            )
            .join('\n\n')
    }\n`,
  );
} else if (command === 'r2 bucket lifecycle' && args[3] === 'add') {
  const [bucket, name, prefix] = args.slice(4, 7);
  state.lifecycle = {
    ...state.lifecycle,
    [bucket]: [
      ...(state.lifecycle?.[bucket] ?? []),
      { name, prefix, expireDays: Number(option('--expire-days')), abortMultipartDays: Number(option('--abort-multipart-days') ?? 0) },
    ],
  };
  save();
  out(`${banner}Adding lifecycle rule '${name}' to bucket '${bucket}'...\n✨ Added lifecycle rule '${name}' to bucket '${bucket}'.\n`);
} else if (command === 'secret list') {
  if (!state.worker) {
    process.stderr.write(recorded('secret-list-no-worker.stderr'));
    process.exit(1);
  }
  out(
    JSON.stringify(
      state.worker.secrets.map((name) => ({ name, type: 'secret_text' })),
      null,
      '  ',
    ) + '\n',
  );
} else if (command.startsWith('secret put')) {
  const value = stdin().trim();
  if (!state.worker) state.worker = { secrets: [], deploys: 0, config: null };
  state.worker.secrets.push(args[2]);
  state.secretLengths = { ...state.secretLengths, [args[2]]: value.length };
  save();
  out(`${banner}🌀 Creating the secret for the Worker "edge-registry" \n✨ Success! Uploaded secret ${args[2]}\n`);
} else if (command === 'deploy') {
  if (!state.worker) state.worker = { secrets: [], deploys: 0, config: null };
  const secretsFile = option('--secrets-file');
  if (secretsFile) {
    const secrets = JSON.parse(readFileSync(secretsFile, 'utf8'));
    for (const [name, value] of Object.entries(secrets)) {
      if (!state.worker.secrets.includes(name)) state.worker.secrets.push(name);
      state.secretLengths = { ...state.secretLengths, [name]: value.length };
    }
  }
  state.worker.deploys++;
  state.worker.config = readFileSync(option('--config'), 'utf8');
  save();
  out(
    `${banner}Total Upload: 117.43 KiB / gzip: 26.01 KiB\nUploaded edge-registry (2.71 sec)\nDeployed edge-registry triggers (1.05 sec)\n  https://edge-registry.acme.workers.dev\n  ${state.hostname ?? 'registry.acme.com'} (custom domain)\nCurrent Version ID: 5d1c8f1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f\n`,
  );
} else {
  process.stderr.write(`fake wrangler: unexpected command ${JSON.stringify(args)}\n`);
  process.exit(2);
}
