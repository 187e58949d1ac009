import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/protocol/errors';
import { checkedEntryName, checkedLinkTarget, isDocFile, isExcludedFromPackage, requireRootConfiguration } from '../../src/protocol/module-package';

/**
 * The module package rules shared by publish-module, the publish API and the
 * module proxy: names stay inside the package, links too, a .tf or .tofu
 * file at the root.
 */

describe('module package rules', () => {
  it('normalises relative names and refuses NUL, absolute paths, drive letters and ".." segments', () => {
    expect(checkedEntryName('p', './a//b/./main.tf')).toBe('a/b/main.tf');
    expect(checkedEntryName('p', 'a\\b.tf')).toBe('a/b.tf');
    for (const [name, why] of [
      ['a\0b', /NUL character/],
      ['/etc/passwd', /absolute path/],
      ['\\x', /absolute path/],
      ['C:/x.tf', /absolute path/],
      ['a/../../x.tf', /"\.\." path segment/],
      ['..', /"\.\." path segment/],
    ] as const) {
      expect(() => checkedEntryName('p', name)).toThrow(InputError);
      expect(() => checkedEntryName('p', name)).toThrow(why);
    }
    // A hostile upstream's long name is cut in the message.
    expect(() => checkedEntryName('p', `/${'x'.repeat(500)}`)).toThrow(/^p: entry "\/x{99}" has an absolute path/);
  });

  it('lets links point inside the package only', () => {
    expect(() => checkedLinkTarget('p', 'modules/a/main.tf', '../b/main.tf')).not.toThrow();
    expect(() => checkedLinkTarget('p', 'modules/a/main.tf', '../../main.tf')).not.toThrow();
    expect(() => checkedLinkTarget('p', 'modules/a/main.tf', '../../../x')).toThrow(/outside the module/);
    expect(() => checkedLinkTarget('p', 'x', '/etc/passwd')).toThrow(/absolute path/);
    expect(() => checkedLinkTarget('p', 'x', 'C:/x')).toThrow(/absolute path/);
  });

  it('needs a .tf or .tofu file at the root', () => {
    expect(() => requireRootConfiguration('p', ['main.tofu'])).not.toThrow();
    expect(() => requireRootConfiguration('p', ['sub/main.tf', 'README.md'])).toThrow(/has no \.tf or \.tofu file at its root/);
  });

  it('leaves out VCS and Terraform state, reads docs from the root and modules/NAME/', () => {
    expect(['.git/config', 'a/.terraform/x', 'terraform.tfstate', 'a/terraform.tfstate.backup', 'sub/.terraform.lock.hcl'].map(isExcludedFromPackage)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['.terraform.lock.hcl', 'main.tf', 'gitignore'].map(isExcludedFromPackage)).toEqual([false, false, false]);
    expect(['README.md', 'main.tf', 'x.tofu', 'modules/a/variables.tf'].map(isDocFile)).toEqual([true, true, true, true]);
    expect(['docs/README.md', 'modules/a/b/c.tf', 'examples/x/main.tf', 'main.tf.json'].map(isDocFile)).toEqual([false, false, false, false]);
  });
});
