import { describe, expect, it } from 'vitest';
import { UpstreamError } from '../../../src/mirror/upstream-http';
import { packageSource, requireHttps, withArchivesOverride } from '../../../src/mirror/modules/source';

/**
 * What the module proxy fetches for an upstream's X-Terraform-Get: GitHub
 * sources as the tag's tarball, HTTP(S) archives, go-getter subdirectories;
 * everything else refused with a 422 naming the source.
 */
const BASE = 'https://registry.terraform.io/v1/modules/terraform-aws-modules/vpc/aws/5.1.0/download';
const tarball = (ref: string, subdir = '') => ({
  url: `https://codeload.github.com/terraform-aws-modules/terraform-aws-vpc/tar.gz/${ref}`,
  format: 'tar.gz',
  stripTop: true,
  subdir,
});

describe('packageSource', () => {
  it("reads every GitHub form public registry modules use as the ref's tarball", () => {
    for (const location of [
      'git::https://github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5.1.0',
      'git::https://github.com/terraform-aws-modules/terraform-aws-vpc.git?ref=v5.1.0',
      'github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5.1.0',
      'git::ssh://git@github.com/terraform-aws-modules/terraform-aws-vpc.git?ref=v5.1.0',
      'git@github.com:terraform-aws-modules/terraform-aws-vpc.git?ref=v5.1.0',
    ]) {
      expect(packageSource(location, BASE), location).toMatchObject(tarball('v5.1.0'));
    }
    expect(packageSource('git::https://github.com/terraform-aws-modules/terraform-aws-vpc.git//modules/vpc-endpoints?ref=v5.1.0', BASE)).toMatchObject(
      tarball('v5.1.0', 'modules/vpc-endpoints'),
    );
  });

  it('reads HTTP(S) archives, relative ones against the download URL, ?archive= and //*', () => {
    expect(packageSource('https://example.com/vpc-1.0.0.tar.gz', BASE)).toMatchObject({
      url: 'https://example.com/vpc-1.0.0.tar.gz',
      format: 'tar.gz',
      stripTop: false,
      subdir: '',
    });
    expect(packageSource('/v1/module-archives/x/vpc-1.0.0.zip', BASE)).toMatchObject({
      url: 'https://registry.terraform.io/v1/module-archives/x/vpc-1.0.0.zip',
      format: 'zip',
    });
    expect(packageSource('https://github.com/o/r/archive/v1.0.0.tar.gz//*?archive=tar.gz', BASE)).toMatchObject({
      url: 'https://github.com/o/r/archive/v1.0.0.tar.gz',
      format: 'tar.gz',
      stripTop: true,
      subdir: '',
    });
    expect(packageSource('https://example.com/get?id=7&archive=zip', BASE)).toMatchObject({ url: 'https://example.com/get?id=7', format: 'zip' });
  });

  const refused: [string, RegExp][] = [
    ['s3::https://s3-eu-west-1.amazonaws.com/bucket/vpc.zip', /s3:: sources need that service's credentials/],
    ['gcs::https://www.googleapis.com/storage/v1/bucket/vpc.zip', /gcs:: sources/],
    ['hg::https://example.com/repo', /hg:: sources/],
    ['git::https://gitlab.com/acme/vpc.git?ref=v1', /fetched only from github\.com .*not from gitlab\.com/],
    ['bitbucket.org/acme/vpc', /not an archive URL/],
    ['git::https://github.com/acme/vpc.git', /names no \?ref=/],
    ['github.com/acme/vpc?ref=../../x', /is not a tag or commit name/],
    ['git::https://github.com/acme/vpc.git//../x?ref=v1', /is not a plain path/],
    ['https://example.com/vpc/', /not an archive URL/],
    ['ftp://example.com/vpc.tar.gz', /ftp: sources are not fetched/],
  ];
  for (const [location, why] of refused) {
    it(`refuses ${location} with a 422 naming it`, () => {
      let error: (Error & { status?: number }) | undefined;
      try {
        packageSource(location, BASE);
      } catch (thrown) {
        error = thrown as Error & { status?: number };
      }
      expect(error?.status).toBe(422);
      expect(error?.message).toContain(JSON.stringify(location));
      expect(error?.message).toMatch(why);
    });
  }
});

describe('withArchivesOverride', () => {
  it("replaces https://HOST/ by the policy's archives base, keeping path and query", () => {
    const archives = (host: string) => (host === 'codeload.github.com' ? 'http://127.0.0.1:9000/codeload/' : undefined);
    expect(withArchivesOverride('https://codeload.github.com/o/r/tar.gz/v1?x=1', archives)).toBe('http://127.0.0.1:9000/codeload/o/r/tar.gz/v1?x=1');
    expect(withArchivesOverride('https://example.com/a.zip', archives)).toBe('https://example.com/a.zip');
  });
});

describe('requireHttps', () => {
  const named = (host: string) => host === 'downloads.internal.example';
  it('fetches https:// packages, and plain http:// only from a host the policy names', () => {
    expect(requireHttps('https://downloads.example.com/x.zip', named)).toBe('https://downloads.example.com/x.zip');
    expect(requireHttps('http://downloads.internal.example/x.zip', named)).toBe('http://downloads.internal.example/x.zip');
    const refused = (() => {
      try {
        requireHttps('http://downloads.example.com/x.zip', named, 'http://downloads.example.com/x.zip');
        return null;
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(UpstreamError);
    expect((refused as UpstreamError).status).toBe(422);
    expect((refused as Error).message).toMatch(/cannot be proxied: it is plain http:\/\/.*hosts\["downloads\.example\.com"\]/);
    // packageSource still classifies an http:// archive: the proxy applies requireHttps to it before fetching.
    expect(packageSource('http://downloads.example.com/x.zip', 'https://registry.example.com/v1/').url).toBe('http://downloads.example.com/x.zip');
  });
});
