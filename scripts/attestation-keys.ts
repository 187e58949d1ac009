/**
 * `npm run attestation-keys -- list|rotate [options]`
 *
 * The registry's attestation keys (docs/provenance.md): the Ed25519 keys that
 * sign provenance statements and publish attestations, one set per registry
 * hostname, private halves sealed under SIGNING_KEY_SECRET in R2. The first
 * key is made by the first publish that signs; `rotate` adds a new key that
 * signs from then on — older keys stay listed at /v1/provenance/keys, so
 * statements they signed keep verifying. No private key is ever printed.
 *
 * Exit status: 0 on success, 1 for bad input (no secret), 2 for bad
 * arguments, 3 for other failures.
 */
import { parseArgs } from 'node:util';
import { parseHostname } from '../src/protocol/index';
import { attestationPublicKeys, rotateAttestationKey } from '../src/store/keys/attestation-keys';
import { run, say, STATE_OPTIONS, UsageError } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import { heldKeySecret } from './lib/held-keys';
import { openStore } from './lib/stores/open';
import { audited } from './lib/audit';

const USAGE = `usage: npm run attestation-keys -- COMMAND [options]

  list [--json]     the attestation public keys (kid, created), newest last: the last one signs
  rotate            add a new key that signs from now on; old keys stay listed and keep verifying
                    (seals it under $SIGNING_KEY_SECRET; locally: .dev.vars)

  --remote, --env NAME     the R2 bucket of wrangler.toml (needs $R2_ACCESS_KEY_ID, $R2_SECRET_ACCESS_KEY, $CLOUDFLARE_ACCOUNT_ID)
  --config PATH            wrangler.toml (default ./wrangler.toml)
  --persist-to DIR         local state root (default .wrangler/state)
  --hostname HOST          registry hostname (default REGISTRY_HOSTNAME)
  --json                   print the result as JSON on stdout`;

run(async () => {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { ...STATE_OPTIONS, hostname: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (values.help) {
    say(USAGE);
    return;
  }
  const [command, ...rest] = positionals;
  if (!command || !['list', 'rotate'].includes(command)) throw new UsageError('expected one command: list or rotate');
  if (rest.length) throw new UsageError(`unexpected argument "${rest[0]}"`);
  const config = await readRegistryConfig({ configPath: values.config, env: values.env, persistTo: values['persist-to'] });
  const hostname = values.hostname ? parseHostname(values.hostname) : config.hostname;
  const store = await openStore(config, { remote: values.remote });
  try {
    if (command === 'rotate') {
      const secret = heldKeySecret(config, values.remote);
      const key = await audited(
        store,
        values.remote,
        { action: 'attestation-key.rotate', target: hostname },
        () => rotateAttestationKey(store.blobs, secret, hostname),
        (k) => ({ outcome: 'ok', reason: `new key ${k.kid}` }),
      );
      say(`attestation key ${key.kid} of ${hostname} signs from now on; older keys stay listed at /v1/provenance/keys`);
      if (values.json) process.stdout.write(`${JSON.stringify({ key })}\n`);
    } else {
      const keys = await attestationPublicKeys(store.blobs, hostname);
      if (values.json) process.stdout.write(`${JSON.stringify({ hostname, keys })}\n`);
      else if (keys.length === 0) say(`${hostname} has no attestation key yet: the first publish that signs a statement makes one (or run rotate)`);
      else for (const [i, k] of keys.entries()) say(`${k.kid}  ${k.created ?? ''}${i === keys.length - 1 ? '  (signs)' : ''}`);
    }
  } finally {
    await store.close();
  }
}, USAGE);
