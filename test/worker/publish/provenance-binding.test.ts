import { env, exports } from 'cloudflare:workers';
import { importJWK, SignJWT, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { verifyProvenance, type VerifyOptions } from '../../../scripts/lib/provenance-verify';
import { parsePublisherInput } from '../../../src/access/publishers';
import { signEnvelope, type DsseEnvelope } from '../../../src/protocol/dsse';
import { buildProvenance } from '../../../src/provenance/statement';
import { currentAttestationKey } from '../../../src/store/keys/attestation-keys';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { writePublishers } from '../../../src/store/publishers/write';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { BlobStore } from '../../../src/store/store';
import { ORIGIN } from '../helpers';
import { buildRelease, HOST, publishRelease } from './api';

/**
 * A statement is bound to its package. The same release (byte for byte: file
 * names carry no namespace) is published by a trusted job into two
 * namespaces; each gets a validly signed statement. `npm run verify`'s checks
 * (scripts/lib/provenance-verify.ts), run here against the real Worker with a
 * registry-in-the-middle that hands out the other namespace's statement,
 * must refuse it: only the package address the statement names tells them
 * apart. Also: a statement signed before statements named their package, and
 * the repository id.
 */
const { github } = inject('ciIssuers');
const REPO = 'acme/terraform-provider-thing';
const now = () => Math.floor(Date.now() / 1000);

async function mint(): Promise<string> {
  const ref = 'refs/tags/v1.0.0';
  const claims: JWTPayload = {
    sub: `repo:${REPO}:ref:${ref}`,
    repository: REPO,
    repository_id: '123456789',
    repository_owner: 'acme',
    repository_owner_id: '4242001',
    ref,
    ref_type: 'tag',
    sha: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678',
    run_id: '4242',
    workflow_ref: `${REPO}/.github/workflows/release.yml@${ref}`,
  };
  return new SignJWT({ iss: github.url, aud: HOST, iat: now(), nbf: now(), exp: now() + 300, jti: crypto.randomUUID(), ...claims })
    .setProtectedHeader({ alg: github.alg, kid: github.kid })
    .sign(await importJWK(github.privateJwk, github.alg));
}

/** The Worker, with `rewrite` deciding what a registry-in-the-middle answers instead for some paths. */
function throughMiddle(rewrite: (path: string) => Promise<Response | null> | Response | null = () => null): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const replaced = await rewrite(url.pathname);
    return replaced ?? exports.default.fetch(new Request(new URL(url.pathname + url.search, ORIGIN), init));
  }) as typeof fetch;
}

const verify = (through: typeof fetch, extra: Partial<VerifyOptions> = {}, lines: string[] = []) =>
  verifyProvenance({ address: `${HOST}/bound/thing`, version: '1.0.0', registry: ORIGIN, fetch: through, log: (l) => lines.push(l), ...extra });

beforeAll(async () => {
  const key = inject('fixtureSigningKey');
  for (const ns of ['bound', 'elsewhere']) {
    await writeSigningKeys(env.REGISTRY_KV, HOST, ns, [{ key_id: key.keyId, ascii_armor: key.armoredPublicKey }]);
    await storeHeldKey(env.REGISTRY_KV, env.SIGNING_KEY_SECRET!, HOST, ns, key.keyId, key.armoredPrivateKey);
    await writePublishers({ kv: env.REGISTRY_KV as never, blobs: env.REGISTRY_R2 as never }, HOST, ns, [
      await parsePublisherInput({
        issuer: github.url,
        repository: REPO,
        workflow: 'release.yml',
        ref: 'refs/tags/v*',
        repositoryId: '123456789',
        ownerId: '4242001',
        packages: [`${ns}/thing`],
      }),
    ]);
  }
  const release = await buildRelease('thing', '1.0.0', { unsigned: true });
  for (const ns of ['bound', 'elsewhere']) {
    const result = await publishRelease(await mint(), ns, release);
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(200);
  }
});

describe('npm run verify: a statement is about one package', { timeout: 60_000 }, () => {
  it('verifies the statement of this package, which names its full address and version', async () => {
    const lines: string[] = [];
    const result = await verify(throughMiddle(), { repository: REPO, repositoryId: '123456789' }, lines);
    expect(result).toMatchObject({ repository: REPO, repositoryId: '123456789' });
    expect(lines).toContain(`package: the statement names ${HOST}/bound/thing 1.0.0`);
  });

  it("refuses another namespace's statement of the very same files, validly signed, presented for this one", async () => {
    const middle = throughMiddle((path) =>
      path === '/v1/provenance/providers/bound/thing/1.0.0'
        ? exports.default.fetch(new Request(`${ORIGIN}/v1/provenance/providers/elsewhere/thing/1.0.0`))
        : null,
    );
    await expect(verify(middle)).rejects.toThrow(
      `provenance does not match: the statement is about ${HOST}/elsewhere/thing 1.0.0, not ${HOST}/bound/thing 1.0.0 (a statement of another package presented for this one)`,
    );
    // The namespace compares without case, as Terraform compares it.
    await expect(verify(throughMiddle(), { version: '1.0.0', address: `${HOST}/BOUND/thing` })).resolves.toBeTruthy();
  });

  it('a statement signed before statements named their package: refused by default, accepted with --accept-unbound by its files alone', async () => {
    const served = (await (await exports.default.fetch(new Request(`${ORIGIN}/v1/provenance/providers/bound/thing/1.0.0`))).json()) as DsseEnvelope;
    const bound = JSON.parse(atob(served.payload)) as ReturnType<typeof buildProvenance>['statement'];
    // The same statement as the registry signed it before: no package in the registry facts.
    const registry = (bound.predicate as { buildDefinition: { internalParameters: { registry: Record<string, unknown> } } }).buildDefinition.internalParameters
      .registry;
    expect(registry.package).toEqual({ address: `${HOST}/bound/thing`, version: '1.0.0' });
    delete registry.package;
    const key = await currentAttestationKey(env.REGISTRY_R2 as unknown as BlobStore, env.SIGNING_KEY_SECRET!, HOST);
    const old = await signEnvelope(new TextEncoder().encode(JSON.stringify(bound)), key.privateKey, key.kid);
    const middle = throughMiddle((path) => (path === '/v1/provenance/providers/bound/thing/1.0.0' ? Response.json(old) : null));
    await expect(verify(middle)).rejects.toThrow(/the statement names no package address .* pass --accept-unbound/);
    const lines: string[] = [];
    await expect(verify(middle, { acceptUnbound: true }, lines)).resolves.toMatchObject({ repositoryId: '123456789' });
    expect(lines).toContain('warning: the statement names no package (signed before statements did); accepted by its files alone (--accept-unbound)');
  });

  it('checks the repository id: the expected one when given, and always the one the publisher rule is pinned to', async () => {
    await expect(verify(throughMiddle(), { repository: REPO, repositoryId: '987654321' })).rejects.toThrow(
      `provenance does not match: built from repository ${REPO} with id 123456789, expected id 987654321`,
    );
    // A statement whose token's repository id is not the one the rule is pinned to (signed by the registry's key).
    const served = (await (await exports.default.fetch(new Request(`${ORIGIN}/v1/provenance/providers/bound/thing/1.0.0`))).json()) as DsseEnvelope;
    const statement = JSON.parse(atob(served.payload)) as { predicate: { buildDefinition: { internalParameters: { github: { repository_id: string } } } } };
    statement.predicate.buildDefinition.internalParameters.github.repository_id = '555';
    const key = await currentAttestationKey(env.REGISTRY_R2 as unknown as BlobStore, env.SIGNING_KEY_SECRET!, HOST);
    const forged = await signEnvelope(new TextEncoder().encode(JSON.stringify(statement)), key.privateKey, key.kid);
    const middle = throughMiddle((path) => (path === '/v1/provenance/providers/bound/thing/1.0.0' ? Response.json(forged) : null));
    await expect(verify(middle, { repository: REPO })).rejects.toThrow(/with id 555, but the registry's publisher rule is pinned to repository id 123456789/);
  });
});
