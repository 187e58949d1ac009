import { env } from 'cloudflare:workers';
import { importJWK, SignJWT, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parsePublisherInput } from '../../../src/access/publishers';
import { verifyEnvelope, type AttestationPublicJwk, type DsseEnvelope } from '../../../src/protocol/dsse';
import { listAuditEntries } from '../../../src/store/audit/read';
import { rotateAttestationKey } from '../../../src/store/keys/attestation-keys';
import { storeHeldKey } from '../../../src/store/keys/held-keys';
import { setProvenanceRequired } from '../../../src/store/provenance';
import { writePublishers } from '../../../src/store/publishers/write';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { BlobStore } from '../../../src/store/store';
import { get } from '../helpers';
import { buildRelease, hex, HOST, issue, publishRelease, registerFixtureKey } from './api';

/**
 * Signed provenance through the publish API inside workerd: a trusted
 * GitHub job's publish gets an SLSA Provenance v1 statement built from its
 * verified claims, signed as a DSSE envelope with the registry's attestation
 * key and served at /v1/provenance/…; a token publish gets a publish
 * attestation; a namespace requiring provenance refuses the token with
 * nothing written; rotation keeps old statements verifying.
 */
const { github } = inject('ciIssuers');
const REPO = 'acme/terraform-provider-thing';
const SHA = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';
const now = () => Math.floor(Date.now() / 1000);

async function mint(claims: JWTPayload): Promise<string> {
  const key = await importJWK(github.privateJwk, github.alg);
  // A fresh jti each: a CI token starts one publish (issue 26).
  return new SignJWT({ iss: github.url, aud: HOST, iat: now(), nbf: now(), exp: now() + 300, jti: crypto.randomUUID(), ...claims })
    .setProtectedHeader({ alg: github.alg, kid: github.kid })
    .sign(key);
}

function job(ref = 'refs/tags/v2.3.0'): JWTPayload {
  return {
    sub: `repo:${REPO}:ref:${ref}`,
    repository: REPO,
    repository_id: '123456789',
    repository_owner: 'acme',
    repository_owner_id: '4242001',
    ref,
    ref_type: 'tag',
    sha: SHA,
    event_name: 'push',
    run_id: '4242',
    run_attempt: '1',
    runner_environment: 'github-hosted',
    workflow_ref: `${REPO}/.github/workflows/release.yml@${ref}`,
    job_workflow_ref: `${REPO}/.github/workflows/release.yml@${ref}`,
  };
}

const keys = async () => ((await (await get('/v1/provenance/keys')).json()) as { keys: AttestationPublicJwk[] }).keys;
const envelopeOf = async (path: string) => (await (await get(`/v1/provenance/${path}`)).json()) as DsseEnvelope;
const statementOf = (envelope: DsseEnvelope) => JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(envelope.payload), (c) => c.charCodeAt(0))));

beforeAll(async () => {
  const key = inject('fixtureSigningKey');
  for (const ns of ['prov', 'strict']) {
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
        namespaceWide: true,
      }),
    ]);
  }
  await registerFixtureKey('prov');
});

describe('build provenance of CI-published releases', { timeout: 60_000 }, () => {
  it('a keyless publish gets a signed SLSA statement of exactly the served files, from the verified claims', async () => {
    const release = await buildRelease('thing', '2.3.0', { unsigned: true });
    const result = await publishRelease(await mint(job()), 'prov', release);
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(200);

    const response = await get('/v1/provenance/providers/prov/thing/2.3.0');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-provenance-kind')).toBe('build');
    const envelope = (await response.json()) as DsseEnvelope;
    expect(envelope.payloadType).toBe('application/vnd.in-toto+json');
    const published = await keys();
    expect(published.map((k) => k.kid)).toContain(envelope.signatures[0]!.keyid);
    const { kid } = await verifyEnvelope(envelope, published);
    expect(kid).toBe(envelope.signatures[0]!.keyid);

    const statement = statementOf(envelope);
    expect(statement._type).toBe('https://in-toto.io/Statement/v1');
    expect(statement.predicateType).toBe('https://slsa.dev/provenance/v1');
    // Subjects: every zip and SHA256SUMS, with the digests of the bytes served.
    const served = [...release.files.keys()].filter((f) => !f.endsWith('.sig'));
    expect(statement.subject.map((s: { name: string }) => s.name).sort()).toEqual(served.sort());
    for (const s of statement.subject as { name: string; digest: { sha256: string } }[]) {
      const bytes = new Uint8Array(await (await get(`/v1/archives/${HOST}/prov/thing/2.3.0/${s.name}`)).arrayBuffer());
      expect(s.digest.sha256, s.name).toBe(await hex(bytes));
    }
    const p = statement.predicate;
    expect(p.buildDefinition.buildType).toBe('https://actions.github.io/buildtypes/workflow/v1');
    expect(p.buildDefinition.externalParameters.workflow).toEqual({
      ref: 'refs/tags/v2.3.0',
      repository: `http://127.0.0.1:${new URL(github.url).port}/${REPO}`,
      path: '.github/workflows/release.yml',
    });
    expect(p.buildDefinition.internalParameters.github).toEqual({
      event_name: 'push',
      repository_id: '123456789',
      repository_owner_id: '4242001',
      runner_environment: 'github-hosted',
    });
    expect(p.buildDefinition.internalParameters.registry.publisher).toMatchObject({
      kind: 'github',
      repository: REPO,
      repository_id: '123456789',
      repository_owner_id: '4242001',
      workflow: 'release.yml',
      ref: 'refs/tags/v*',
    });
    expect(p.buildDefinition.resolvedDependencies).toEqual([
      { uri: expect.stringMatching(new RegExp(`^git\\+http://127\\.0\\.0\\.1:\\d+/${REPO}@refs/tags/v2\\.3\\.0$`)), digest: { gitCommit: SHA } },
    ]);
    expect(p.runDetails.builder.id).toMatch(new RegExp(`/${REPO}/\\.github/workflows/release\\.yml@refs/tags/v2\\.3\\.0$`));
    expect(p.runDetails.metadata.invocationId).toMatch(new RegExp(`/${REPO}/actions/runs/4242/attempts/1$`));

    // The page says where it was built, with links.
    const page = await (await get('/providers/prov/thing/2.3.0')).text();
    expect(page).toContain(
      `Built from <a href="http://127.0.0.1:${new URL(github.url).port}/${REPO}/commit/${SHA}">${REPO}@${SHA.slice(0, 7)}</a> by release.yml, <a href=`,
    );
    expect(page).toMatch(/run 4242<\/a> — verified/);
  });

  it("tampering is caught: a changed payload byte, a changed signature, another release's statement", async () => {
    const published = await keys();
    const envelope = await envelopeOf('providers/prov/thing/2.3.0');
    const body = Uint8Array.from(atob(envelope.payload), (c) => c.charCodeAt(0));
    body[body.length - 3] = body[body.length - 3]! ^ 1;
    let binary = '';
    for (const b of body) binary += String.fromCharCode(b);
    await expect(verifyEnvelope({ ...envelope, payload: btoa(binary) }, published)).rejects.toThrow(/does not verify/);
    const sig = envelope.signatures[0]!;
    const flipped = sig.sig[5] === 'A' ? 'B' : 'A';
    await expect(verifyEnvelope({ ...envelope, signatures: [{ ...sig, sig: sig.sig.slice(0, 5) + flipped + sig.sig.slice(6) }] }, published)).rejects.toThrow(
      /does not verify/,
    );
    await expect(verifyEnvelope({ ...envelope, payloadType: 'text/plain' }, published)).rejects.toThrow(/payloadType/);
  });

  it('a token publish gets a publish attestation, marked not build provenance; the page says there is none', async () => {
    const { token } = await issue('publish', ['prov']);
    const release = await buildRelease('tokened', '1.0.0');
    const result = await publishRelease(token, 'prov', release);
    expect(result.committed?.status, JSON.stringify(result.body)).toBe(200);
    const response = await get('/v1/provenance/providers/prov/tokened/1.0.0');
    expect(response.headers.get('x-provenance-kind')).toBe('publish');
    const envelope = (await response.json()) as DsseEnvelope;
    await verifyEnvelope(envelope, await keys());
    const statement = statementOf(envelope);
    expect(statement.predicateType).toBe('https://edge-registry.dev/attestations/publish/v1');
    expect(statement.predicate).toMatchObject({ buildProvenance: false, actor: { kind: 'token' } });
    const page = await (await get('/providers/prov/tokened/1.0.0')).text();
    expect(page).toContain('No build provenance');
    expect((await get('/v1/provenance/providers/prov/nothing/1.0.0')).status).toBe(404);
  });

  it('a namespace requiring provenance refuses a token publish with nothing written, audited; a trusted job still publishes', async () => {
    await setProvenanceRequired(env.REGISTRY_R2 as unknown as BlobStore, HOST, 'strict', true);
    const { token } = await issue('publish', ['strict']);
    const release = await buildRelease('guarded', '1.0.0');
    const result = await publishRelease(token, 'strict', release);
    expect(result.started.status).toBe(403);
    expect(JSON.stringify(result.body)).toMatch(/requires build provenance/);
    expect((await env.REGISTRY_R2.list({ prefix: `${HOST}/strict/guarded/` })).objects).toEqual([]);
    expect((await env.REGISTRY_R2.list({ prefix: `.records/${HOST}/strict/` })).objects).toEqual([]);
    expect((await env.REGISTRY_R2.list({ prefix: `.provenance/${HOST}/providers/strict/` })).objects).toEqual([]);
    const refused = (await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace: 'strict' })).entries.filter(
      (e) => e.target === `${HOST}/strict/guarded 1.0.0` && e.outcome === 'refused',
    );
    expect(refused.length).toBe(1);
    expect(refused[0]!.reason).toMatch(/requires build provenance/);

    const ok = await publishRelease(await mint(job('refs/tags/v1.0.0')), 'strict', await buildRelease('guarded', '1.0.0', { unsigned: true }));
    expect(ok.committed?.status, JSON.stringify(ok.body)).toBe(200);
    // A CI token without the claims provenance needs (no sha) is refused there too.
    const partial = { ...job('refs/tags/v1.0.1') };
    delete partial.sha;
    const refusedCi = await publishRelease(await mint(partial), 'strict', await buildRelease('guarded', '1.0.1', { unsigned: true }));
    expect(refusedCi.started.status).toBe(403);
    expect(JSON.stringify(refusedCi.body)).toMatch(/lacks sha/);
  });

  it('rotating the attestation key keeps old statements verifying; new ones are signed by the new key', async () => {
    const before = await envelopeOf('providers/prov/thing/2.3.0');
    const rotated = await rotateAttestationKey(env.REGISTRY_R2 as unknown as BlobStore, env.SIGNING_KEY_SECRET!, HOST);
    const published = await keys();
    expect(published.map((k) => k.kid)).toContain(before.signatures[0]!.keyid);
    expect(published.at(-1)!.kid).toBe(rotated.kid);
    await verifyEnvelope(before, published);
    const release = await buildRelease('thing', '2.4.0', { unsigned: true });
    expect((await publishRelease(await mint(job('refs/tags/v2.4.0')), 'prov', release)).committed?.status).toBe(200);
    const after = await envelopeOf('providers/prov/thing/2.4.0');
    expect(after.signatures[0]!.keyid).toBe(rotated.kid);
    expect((await verifyEnvelope(after, published)).kid).toBe(rotated.kid);
  });
});
