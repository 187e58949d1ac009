import { describe, expect, it } from 'vitest';
import { parsePlatform, parsePlatformName } from '../../src/protocol/platform';

describe('parsePlatformName (file names, --binary, mirror documents)', () => {
  it('accepts a known GOOS_GOARCH', () => {
    expect(parsePlatformName('linux_amd64')).toEqual({ os: 'linux', arch: 'amd64' });
    expect(parsePlatformName('windows_386')).toEqual({ os: 'windows', arch: '386' });
  });

  it('refuses an unknown os or arch, naming it', () => {
    expect(() => parsePlatformName('linx_amd64')).toThrow('platform "linx_amd64": unknown os "linx"');
    expect(() => parsePlatformName('linux_amd65')).toThrow('platform "linux_amd65": unknown arch "amd65"');
  });

  it('refuses what is not os_arch', () => {
    for (const bad of ['linux', 'linux_amd64_v2', 'Linux_amd64', '_amd64', 'linux-amd64']) {
      expect(() => parsePlatformName(bad), bad).toThrow('must look like os_arch');
    }
  });
});

describe('parsePlatform (request paths)', () => {
  it('lower-cases and does not require a known GOOS (an unknown one is simply not found)', () => {
    expect(parsePlatform('Haiku', 'AMD64')).toEqual({ os: 'haiku', arch: 'amd64' });
  });

  it('refuses anything but 1–32 letters or digits', () => {
    for (const [os, arch] of [
      ['', 'amd64'],
      ['linux', ''],
      ['li_nux', 'amd64'],
      ['linux', 'x'.repeat(33)],
    ]) {
      expect(() => parsePlatform(os!, arch!), `${os}/${arch}`).toThrow(/is not a valid platform name/);
    }
  });
});
