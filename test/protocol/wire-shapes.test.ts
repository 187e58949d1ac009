import { describe, expect, it } from 'vitest';
import { discoveryBody, parseServiceDiscovery, PROVIDERS_V1_PATH } from '../../src/protocol/discovery';
import { errorBody, WireShapeError } from '../../src/protocol/errors';
import { mirrorIndexBody, mirrorVersionBody, parseMirrorIndexResponse, parseMirrorVersionResponse } from '../../src/protocol/mirror';
import { parseProviderPackageResponse, parseProviderVersionsResponse, providerPackageBody, providerVersionsBody } from '../../src/protocol/providers-v1';
import {
  archiveFilename,
  executableName,
  executableNamePattern,
  manifestFilename,
  parseReleaseFilename,
  servedReleaseFileKind,
  shasumsFilename,
  shasumsSignatureFilename,
} from '../../src/protocol/release-files';

const zh = `zh:${'a'.repeat(64)}`;
const h1 = 'h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=';

describe('wire shapes', () => {
  it("serialise in the protocol documents' field order, byte for byte", () => {
    expect(discoveryBody({ 'providers.v1': PROVIDERS_V1_PATH })).toBe('{"providers.v1":"/v1/providers/"}');
    expect(errorBody('not found')).toBe('{"errors":["not found"]}');
    expect(providerVersionsBody([{ version: '1.0.0', protocols: ['5.0'], platforms: [{ os: 'linux', arch: 'amd64', extra: 1 } as never] }])).toBe(
      '{"versions":[{"version":"1.0.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"}]}]}',
    );
    expect(mirrorIndexBody(['1.0.0', '1.1.0'])).toBe('{"versions":{"1.0.0":{},"1.1.0":{}}}');
    expect(mirrorVersionBody([['linux_amd64', { url: '/v1/archives/x.zip', hashes: [h1, zh] }]])).toBe(
      `{"archives":{"linux_amd64":{"url":"/v1/archives/x.zip","hashes":["${h1}","${zh}"]}}}`,
    );
    const body = providerPackageBody({
      packages: { linux_amd64: { hashes: [zh, h1], package_size: 3 } },
      signing_keys: { gpg_public_keys: [{ key_id: '0123456789ABCDEF', ascii_armor: 'armor' }] },
      shasum: 'a'.repeat(64),
      shasums_signature_url: 's.sig',
      shasums_url: 's',
      download_url: 'd',
      filename: 'f',
      arch: 'amd64',
      os: 'linux',
      protocols: ['6.0'],
    });
    expect(Object.keys(JSON.parse(body))).toEqual([
      'protocols',
      'os',
      'arch',
      'filename',
      'download_url',
      'shasums_url',
      'shasums_signature_url',
      'shasum',
      'signing_keys',
      'packages',
    ]);
    expect(parseProviderPackageResponse(JSON.parse(body))).toEqual(JSON.parse(body));
  });

  it('parse what the builders produce, and name the field that is wrong', () => {
    expect(parseProviderVersionsResponse({ versions: [{ version: '1.0.0' }] })).toEqual({ versions: [{ version: '1.0.0' }] });
    expect(() => parseProviderVersionsResponse({ versions: [{ version: 1 }] })).toThrow(new WireShapeError('versions[0].version', 'a string', 1));
    expect(() => parseProviderVersionsResponse({})).toThrow(/^versions: expected an array, got nothing$/);
    expect(() => parseProviderPackageResponse({ protocols: ['5.0'], os: 'linux' })).toThrow(/^arch: expected a string/);
    expect(() => parseMirrorIndexResponse({ versions: { '1.0.0': [] } })).toThrow(/^versions\.1\.0\.0: expected an object/);
    expect(() => parseMirrorVersionResponse({ archives: { linux_amd64: { hashes: [] } } })).toThrow(/^archives\.linux_amd64\.url: expected a string/);
    expect(parseServiceDiscovery({ 'providers.v1': '/v1/providers/', other: 1 })).toEqual({ 'providers.v1': '/v1/providers/' });
    expect(() => parseServiceDiscovery({ 'providers.v1': 7 })).toThrow(/^providers\.v1: expected a string, got 7$/);
  });
});

describe('release file names', () => {
  it('are built and taken apart by the same definitions', () => {
    const platform = { os: 'linux', arch: 'amd64' };
    expect(parseReleaseFilename(archiveFilename('my-thing', '1.2.3-beta.1', platform))).toEqual({
      kind: 'archive',
      type: 'my-thing',
      version: '1.2.3-beta.1',
      platform: 'linux_amd64',
    });
    expect(parseReleaseFilename(shasumsFilename('t', '1.0.0'))).toEqual({ kind: 'shasums', type: 't', version: '1.0.0' });
    expect(parseReleaseFilename(shasumsSignatureFilename('t', '1.0.0'))).toEqual({ kind: 'signature', type: 't', version: '1.0.0' });
    expect(parseReleaseFilename(manifestFilename('t', '1.0.0'))).toEqual({ kind: 'manifest', type: 't', version: '1.0.0' });
    expect(parseReleaseFilename('terraform-provider-t_1.0.0_linux.zip')).toBeNull();
    expect(parseReleaseFilename('README.md')).toBeNull();
  });

  it('served are only archives, SHA256SUMS and its signature of that type and version', () => {
    expect(servedReleaseFileKind('t', '1.0.0', 'terraform-provider-t_1.0.0_linux_amd64.zip')).toBe('archive');
    expect(servedReleaseFileKind('t', '1.0.0', 'terraform-provider-t_1.0.0_SHA256SUMS.sig')).toBe('signature');
    expect(servedReleaseFileKind('t', '1.0.0', 'terraform-provider-t_1.0.0_Linux_amd64.zip')).toBeNull();
    expect(servedReleaseFileKind('t', '1.0.0', 'terraform-provider-t_2.0.0_linux_amd64.zip')).toBeNull();
    expect(servedReleaseFileKind('t', '1.0.0', 'terraform-provider-u_1.0.0_SHA256SUMS')).toBeNull();
    expect(servedReleaseFileKind('t', '1.0.0', manifestFilename('t', '1.0.0'))).toBeNull();
  });

  it("executables: the exact name and goreleaser's protocol-suffixed one", () => {
    expect(executableName('t', '1.0.0', { os: 'windows' })).toBe('terraform-provider-t_v1.0.0.exe');
    const pattern = executableNamePattern('t', '1.0.0', { os: 'linux' });
    expect(pattern.test('terraform-provider-t_v1.0.0')).toBe(true);
    expect(pattern.test('terraform-provider-t_v1.0.0_x5')).toBe(true);
    expect(pattern.test('terraform-provider-t_v1.0.0.exe')).toBe(false);
    expect(pattern.test('terraform-provider-t_v1x0x0')).toBe(false);
  });
});
