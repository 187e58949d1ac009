import { beforeAll, describe, expect, it } from 'vitest';
import { moduleAddress } from '../../src/protocol/modules-v1';
import { seedModule } from '../fixtures/modules';
import { env, get, issueToken } from './helpers';

/**
 * OpenTofu 1.12's module download in private mode, as documented in OpenTofu's
 * internal/registry/client.go (no OpenTofu binary on this machine: these
 * requests are the ones it makes — User-Agent "OpenTofu/VERSION", the
 * registry's bearer token on the download request and, because
 * use_registry_credentials is true, on the package request too).
 */
const mod = moduleAddress(env.REGISTRY_HOSTNAME, 'acme', 'direct', 'aws');
let bytes: Uint8Array;
let token: string;

beforeAll(async () => {
  bytes = (await seedModule(env.REGISTRY_KV, env.REGISTRY_R2, mod, '1.0.0')).bytes;
  token = (await issueToken(['acme'])).token;
});

const as = (userAgent: string, bearerToken?: string): RequestInit => ({
  headers: { 'user-agent': userAgent, ...(bearerToken ? { authorization: `Bearer ${bearerToken}` } : {}) },
});

describe('OpenTofu ≥ 1.12: the JSON form, fetched with the registry token', () => {
  it('answers 200 {"location", "use_registry_credentials": true} with an unsigned location the token fetches', async () => {
    const response = await get('/v1/modules/acme/direct/aws/1.0.0/download', as('OpenTofu/1.12.0', token));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('vary')).toBe('User-Agent');
    expect(response.headers.get('cache-control')).toBe('private, no-store');
    const body = await response.json<{ location: string; use_registry_credentials: unknown }>();
    expect(body).toEqual({
      location: '/v1/module-archives/registry.example.com/acme/direct/aws/1.0.0/direct-aws-1.0.0.tar.gz',
      use_registry_credentials: true,
    });
    // OpenTofu resolves the location against the download URL and sends its token (InstallModulePackage).
    const archive = await get(body.location, as('OpenTofu/1.12.0', token));
    expect(archive.status).toBe(200);
    expect(new Uint8Array(await archive.arrayBuffer())).toEqual(bytes);
  });

  it('the package refuses a missing, unknown or out-of-scope token', async () => {
    const location = '/v1/module-archives/registry.example.com/acme/direct/aws/1.0.0/direct-aws-1.0.0.tar.gz';
    expect((await get(location, as('OpenTofu/1.12.0'))).status).toBe(403);
    expect((await get(location, as('OpenTofu/1.12.0', 'ert_not-a-token'))).status).toBe(401);
    const { token: other } = await issueToken(['other']);
    expect((await get(location, as('OpenTofu/1.12.0', other))).status).toBe(403);
  });
});

describe('Terraform and older OpenTofu: 204 + X-Terraform-Get with a signed URL, unchanged', () => {
  for (const userAgent of ['Terraform/1.11.4', 'OpenTofu/1.11.2', 'Go-http-client/1.1', 'OpenTofu-custom-agent']) {
    it(`${userAgent}`, async () => {
      const response = await get('/v1/modules/acme/direct/aws/1.0.0/download', as(userAgent, token));
      expect(response.status).toBe(204);
      expect(response.headers.get('vary')).toBe('User-Agent');
      const location = response.headers.get('x-terraform-get')!;
      expect(location).toMatch(/\/direct-aws-1\.0\.0\.tar\.gz\?expires=\d+&signature=/);
      expect((await get(location)).status).toBe(200);
    });
  }

  it('a tampered signature is still refused, even with a valid token beside it', async () => {
    const response = await get('/v1/modules/acme/direct/aws/1.0.0/download', as('Terraform/1.11.4', token));
    const location = response.headers.get('x-terraform-get')!.replace(/signature=./, 'signature=A');
    expect((await get(location, as('Terraform/1.11.4', token))).status).toBe(403);
  });
});
