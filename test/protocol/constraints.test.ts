import { describe, expect, it } from 'vitest';
import { meetsConstraints, newestMatching, parseConstraints } from '../../src/protocol/constraints';
import { InputError } from '../../src/protocol/errors';

/**
 * Terraform's provider version constraints (go-versions "Ruby style", as
 * `terraform init` parses required_providers): each row is a constraint, the
 * versions it must accept and the ones it must refuse.
 */
const table: { constraint: string; accepts: string[]; refuses: string[] }[] = [
  { constraint: '', accepts: ['0.0.1', '1.0.0', '99.0.0'], refuses: ['1.0.0-beta'] },
  { constraint: '1.2.3', accepts: ['1.2.3'], refuses: ['1.2.4', '1.2.2', '1.3.0'] },
  { constraint: '= 1.2.3', accepts: ['1.2.3'], refuses: ['1.2.4'] },
  { constraint: '=1.2.3', accepts: ['1.2.3'], refuses: ['1.2.4'] },
  // Missing parts count as zero: "= 1.2" is exactly 1.2.0, not any 1.2.x.
  { constraint: '= 1.2', accepts: ['1.2.0'], refuses: ['1.2.1', '1.3.0'] },
  { constraint: '1', accepts: ['1.0.0'], refuses: ['1.0.1', '1.1.0'] },
  { constraint: '!= 1.2.3', accepts: ['1.2.2', '1.2.4', '2.0.0'], refuses: ['1.2.3', '1.2.4-rc.1'] },
  { constraint: '> 1.2.3', accepts: ['1.2.4', '2.0.0'], refuses: ['1.2.3', '1.0.0', '1.3.0-beta'] },
  { constraint: '>= 1.2.3', accepts: ['1.2.3', '1.2.4', '10.0.0'], refuses: ['1.2.2', '1.2.3-rc.1'] },
  { constraint: '< 1.2.3', accepts: ['1.2.2', '0.1.0'], refuses: ['1.2.3', '2.0.0', '1.2.3-rc.1'] },
  { constraint: '<= 1.2.3', accepts: ['1.2.3', '1.0.0'], refuses: ['1.2.4'] },
  // ~> with two parts: the last part may grow (>= 1.2.0, < 2.0.0).
  { constraint: '~> 1.2', accepts: ['1.2.0', '1.2.9', '1.3.0', '1.99.0'], refuses: ['1.1.9', '2.0.0', '2.0.0-beta', '1.5.0-beta'] },
  // ~> with three parts: only the patch may grow (>= 1.2.0, < 1.3.0).
  { constraint: '~> 1.2.0', accepts: ['1.2.0', '1.2.7'], refuses: ['1.3.0', '1.1.0', '1.3.0-alpha'] },
  { constraint: '~> 1.2.3', accepts: ['1.2.3', '1.2.10'], refuses: ['1.2.2', '1.3.0'] },
  // A single part behaves like ~> 1.0.
  { constraint: '~> 1', accepts: ['1.0.0', '1.9.9'], refuses: ['0.9.0', '2.0.0'] },
  { constraint: '~> 0.1', accepts: ['0.1.0', '0.9.0'], refuses: ['0.0.9', '1.0.0'] },
  { constraint: '~>1.2', accepts: ['1.4.0'], refuses: ['2.0.0'] },
  // Conjunctions.
  { constraint: '>= 1.0.0, < 2.0.0', accepts: ['1.0.0', '1.9.9'], refuses: ['0.9.9', '2.0.0'] },
  { constraint: '>= 1.2, != 1.3.0, < 1.5', accepts: ['1.2.0', '1.3.1', '1.4.9'], refuses: ['1.3.0', '1.5.0', '1.1.0'] },
  { constraint: ' ~> 1.2 ,  != 1.4.1 ', accepts: ['1.4.0', '1.4.2'], refuses: ['1.4.1'] },
  { constraint: '>= 2.0.0, < 1.0.0', accepts: [], refuses: ['0.5.0', '1.5.0', '2.5.0'] },
  // Pre-releases only by an exact match.
  { constraint: '1.3.0-beta', accepts: ['1.3.0-beta'], refuses: ['1.3.0', '1.3.0-beta.2'] },
  { constraint: '= 1.3.0-beta.1', accepts: ['1.3.0-beta.1'], refuses: ['1.3.0-beta.2', '1.3.0'] },
  { constraint: '>= 1.3.0-beta', accepts: ['1.3.0', '1.4.0'], refuses: ['1.3.0-beta', '1.3.0-rc.1'] },
  { constraint: '~> 1.2, 1.3.0-rc.1', accepts: ['1.3.0-rc.1'], refuses: ['1.3.0', '1.2.0'] },
];

describe('parseConstraints / meetsConstraints', () => {
  for (const { constraint, accepts, refuses } of table) {
    it(`"${constraint}"`, () => {
      const parsed = parseConstraints(constraint);
      for (const version of accepts) expect(meetsConstraints(version, parsed), `${version} meets "${constraint}"`).toBe(true);
      for (const version of refuses) expect(meetsConstraints(version, parsed), `${version} fails "${constraint}"`).toBe(false);
    });
  }

  it('records how many parts each clause wrote, padded to a full version', () => {
    expect(parseConstraints('~> 1.2, >= 1.2.3, 2')).toEqual([
      { operator: '~>', version: '1.2.0', parts: 2 },
      { operator: '>=', version: '1.2.3', parts: 3 },
      { operator: '=', version: '2.0.0', parts: 1 },
    ]);
  });

  it('never accepts a version that is not strict semver', () => {
    const any = parseConstraints('');
    for (const version of ['1.2', 'v1.2.3', 'latest', '']) expect(meetsConstraints(version, any)).toBe(false);
  });

  // Terraform refuses these too (go-versions ParseRubyStyleMulti).
  for (const bad of [
    '~>',
    '>= ',
    'latest',
    '1.2.3.4',
    '== 1.2.3',
    '=> 1.2',
    '=< 1.2',
    '>= 1.0 < 2.0',
    '1.0 || 2.0',
    '~> 1.x',
    '1.*',
    'v1.2.3',
    '>= v1.2',
    '>= 1.0,, < 2.0',
  ]) {
    it(`refuses "${bad}" with an InputError naming it`, () => {
      expect(() => parseConstraints(bad)).toThrow(InputError);
    });
  }
});

describe('newestMatching', () => {
  const published = ['1.0.0', '1.1.0', '1.2.0', '1.2.5', '1.3.0-beta', '1.10.0', '2.0.0', '2.1.0-rc.1'];

  it('picks the newest by semver precedence, not string order', () => {
    expect(newestMatching(published, parseConstraints('~> 1.2'))).toBe('1.10.0');
    expect(newestMatching(published, parseConstraints('~> 1.2.0'))).toBe('1.2.5');
    expect(newestMatching(published, parseConstraints(''))).toBe('2.0.0');
    expect(newestMatching(published, parseConstraints('< 1.10'))).toBe('1.2.5');
  });

  it('selects a pre-release only when named exactly', () => {
    expect(newestMatching(published, parseConstraints('>= 2.0.0'))).toBe('2.0.0');
    expect(newestMatching(published, parseConstraints('2.1.0-rc.1'))).toBe('2.1.0-rc.1');
  });

  it('returns null when nothing matches, including an empty list', () => {
    expect(newestMatching(published, parseConstraints('~> 3.0'))).toBeNull();
    expect(newestMatching([], parseConstraints(''))).toBeNull();
  });

  it('ignores entries that are not semver instead of throwing', () => {
    expect(newestMatching(['garbage', '1.0.0', 'v2.0.0'], parseConstraints(''))).toBe('1.0.0');
  });
});
