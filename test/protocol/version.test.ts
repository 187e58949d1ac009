import { describe, expect, it } from 'vitest';
import { compareVersionsDescending, newestStable, newestVersion } from '../../src/protocol/version';

describe('which version a list or page leads with', () => {
  it('newestStable: the highest version by semver precedence that is not a prerelease, whatever the input order', () => {
    expect(newestStable(['1.2.0', '1.10.0', '2.0.0-beta.1', '1.9.9'])).toBe('1.10.0');
    expect(newestStable(['2.0.0-rc.1', '1.0.0-alpha'])).toBeNull();
    expect(newestStable([])).toBeNull();
  });

  it('newestVersion: the newest stable one, else the newest prerelease, else null', () => {
    expect(newestVersion(['3.0.0-rc.1', '2.1.0', '2.0.0'])).toBe('2.1.0');
    expect(newestVersion(['1.0.0-alpha', '1.0.0-beta.2', '1.0.0-beta.10'])).toBe('1.0.0-beta.10');
    expect(newestVersion([])).toBeNull();
  });

  it('compareVersionsDescending orders newest first by precedence, not as text', () => {
    expect(['1.2.0', '1.10.0', '1.10.0-rc.1', '0.9.0'].sort(compareVersionsDescending)).toEqual(['1.10.0', '1.10.0-rc.1', '1.2.0', '0.9.0']);
  });
});
