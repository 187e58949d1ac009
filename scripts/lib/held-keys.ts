import { InputError } from '../../src/protocol/index';
import { MIN_SECRET_LENGTH } from '../../src/store/keys/seal';
import type { RegistryConfig } from './config';
import { ensureDevSecret, readDevVar, SIGNING_KEY_SECRET } from './dev/vars';

/**
 * Where `npm run keys -- … --held-by-registry` gets the secret it seals the
 * private key under — the same value the Worker opens it with:
 *
 *   $SIGNING_KEY_SECRET when set (required with --remote: the value given to
 *     `wrangler secret put SIGNING_KEY_SECRET`);
 *   otherwise, on the local state, SIGNING_KEY_SECRET of the project's
 *     .dev.vars, generated there when missing (as `npm start` does), so the
 *     local `wrangler dev` signs with the key.
 *
 * Throws InputError naming the fix when it has none, or one too short.
 */
export function heldKeySecret(config: RegistryConfig, remote: boolean | undefined, env: NodeJS.ProcessEnv = process.env): string {
  let secret = env[SIGNING_KEY_SECRET];
  if (!secret && remote) {
    throw new InputError(
      `--held-by-registry --remote: set ${SIGNING_KEY_SECRET} to the Worker's secret (the value of \`wrangler secret put ${SIGNING_KEY_SECRET}\`; generate one with \`openssl rand -base64 32\` and put it there first)`,
    );
  }
  if (!secret) {
    ensureDevSecret(config.projectRoot, SIGNING_KEY_SECRET);
    secret = readDevVar(config.projectRoot, SIGNING_KEY_SECRET);
  }
  if (!secret || secret.length < MIN_SECRET_LENGTH)
    throw new InputError(`${SIGNING_KEY_SECRET} must be at least ${MIN_SECRET_LENGTH} characters (openssl rand -base64 32)`);
  return secret;
}
