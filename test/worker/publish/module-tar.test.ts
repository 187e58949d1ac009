import { beforeAll, describe, expect, it } from 'vitest';
import { paxHeader as pax, tarGz } from '../../fixtures/archives';
import { issue, publishModulePackage } from './api';

// A module .tar.gz published over the publish API (POST /v1/publish/modules/…, PUT, commit) is read by the one tar
// header parser (src/protocol/tar.ts, TarReader), as the module proxy and publish-module read one: a link's target
// is the one extractors use (a pax `linkpath` or a GNU `K` long link over the ustar field), and a damaged header is
// refused. Until the parsers were one, a symlink whose ustar linkname was harmless but whose pax linkpath left the
// package was published. Tars are written header by header by test/fixtures/archives.ts.

const MAIN = 'variable "a" {}\n';
let token: string;
let n = 0;

beforeAll(async () => {
  ({ token } = await issue('publish', ['tarmods'], { name: 'module-tar' }));
});

/** Publishes `tar` as module tarmods/<fresh name>/aws 1.0.0 (publishModulePackage). */
function publish(tar: Uint8Array) {
  return publishModulePackage(token, 'tarmods', `m${++n}`, 'tar.gz', tar);
}

async function refused(tar: Uint8Array, message: RegExp): Promise<void> {
  const { status, errors, listed } = await publish(tar);
  expect(status, errors.join('\n')).toBe(400);
  expect(errors[0]).toMatch(/^m\d+-aws-1\.0\.0\.tar\.gz: /); // the uploaded file's name
  expect(errors[0]).toMatch(message);
  expect(listed).toBe(false);
}

describe('a module .tar.gz published over the publish API', () => {
  it('is published when well formed: a pax path, a GNU long name, a directory and a link inside the package', async () => {
    const { status, errors, listed } = await publish(
      await tarGz([
        { name: 'main.tf', content: MAIN },
        { name: 'modules/', type: '5' },
        pax({ path: `modules/${'a'.repeat(120)}/main.tf` }),
        { name: 'ignored.tf', content: MAIN },
        { name: '././@LongLink', type: 'L', content: `modules/${'b'.repeat(120)}/vars.tf\0` },
        { name: 'also-ignored.tf', content: MAIN },
        pax({ linkpath: 'main.tf' }),
        { name: 'latest.tf', type: '2', link: 'ignored.tf' },
      ]),
    );
    expect(status, errors.join('\n')).toBe(200);
    expect(listed).toBe(true);
  });

  it('refuses a symlink whose pax linkpath leaves the package, whatever its ustar linkname says', async () => {
    await refused(
      await tarGz([{ name: 'main.tf', content: MAIN }, pax({ linkpath: '../../../../etc/passwd' }), { name: 'x.tf', type: '2', link: 'main.tf' }]),
      /link "x\.tf" points to \.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd, outside the module; refused$/,
    );
  });

  it('refuses a symlink whose GNU long link (K) leaves the package', async () => {
    await refused(
      await tarGz([
        { name: 'main.tf', content: MAIN },
        { name: '././@LongLink', type: 'K', content: '../../../../etc/passwd\0' },
        { name: 'x.tf', type: '2', link: 'main.tf' },
      ]),
      /link "x\.tf" points to \.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd, outside the module; refused$/,
    );
  });

  it('refuses a header whose checksum does not match', async () => {
    await refused(
      await tarGz([
        { name: 'main.tf', content: MAIN },
        { name: 'x.tf', content: MAIN, badChecksum: true },
      ]),
      /a header checksum does not match/,
    );
  });
});
