import { describe, expect, it } from 'vitest';
import { parseHostname, parseProviderName } from '../../src/protocol/address';
import { parseVersion } from '../../src/protocol/version';

// Name rules at their edges: one character past a limit, a dash at either end, case.

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error as Error & { status?: number };
  }
  return null;
};

describe('parseProviderName', () => {
  it('accepts letters, digits and inner dashes, lower-cased, up to 64 characters', () => {
    for (const [raw, name] of [
      ['acme', 'acme'],
      ['ACME', 'acme'],
      ['a', 'a'],
      ['a-b--c', 'a-b--c'],
      ['9x', '9x'],
      ['x'.repeat(64), 'x'.repeat(64)],
    ]) {
      expect(parseProviderName(raw!, 'namespace'), raw).toBe(name);
    }
  });

  it('refuses a dash at either end, other characters, 65 characters and the terraform-provider- prefix, with a 400', () => {
    for (const raw of ['acme-', '-acme', '-', 'ac_me', 'ac.me', 'acmé', '', 'x'.repeat(65)]) {
      const error = refusal(() => parseProviderName(raw, 'namespace'));
      expect(error, JSON.stringify(raw)).toMatchObject({ name: 'InputError', status: 400 });
    }
    expect(refusal(() => parseProviderName('terraform-provider-acme', 'type'))?.message).toContain('must not include the "terraform-provider-" prefix');
  });
});

describe('parseHostname', () => {
  it('accepts DNS names with an optional port, lower-cased', () => {
    expect(parseHostname('Registry.Example.COM')).toBe('registry.example.com');
    expect(parseHostname('localhost:8443')).toBe('localhost:8443');
  });

  it('refuses labels with a dash at either end, empty labels, and ports over five digits', () => {
    for (const raw of [
      '-registry.example.com',
      'registry-.example.com',
      'registry..example.com',
      'registry.example.com.',
      'localhost:123456',
      'local_host',
      '',
    ]) {
      expect(
        refusal(() => parseHostname(raw)),
        raw,
      ).toMatchObject({ name: 'InputError', status: 400 });
    }
  });
});

describe('parseVersion', () => {
  it('accepts strict semver only, returning it unchanged', () => {
    for (const version of ['1.0.0', '0.0.1', '1.2.3-beta.1', '1.2.3+build.5', '1.2.3-rc.1+b']) expect(parseVersion(version)).toBe(version);
    for (const version of ['v1.0.0', '1.0', '01.0.0', '1.0.0-', '1.0.0.0', ' 1.0.0', 'latest', `1.0.0-${'a'.repeat(130)}`]) {
      expect(
        refusal(() => parseVersion(version)),
        version,
      ).toMatchObject({ name: 'InputError', status: 400 });
    }
  });
});
