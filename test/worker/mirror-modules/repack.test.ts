import { describe, expect, it } from 'vitest';
import { InputError } from '../../../src/protocol/errors';
import { proxiedModuleDocs } from '../../../src/mirror/modules/docs';
import { MAX_README_BYTES, renderReadme } from '../../../src/http/readme';
import { repackModule } from '../../../src/mirror/modules/repack';
import { readTar } from '../../../src/protocol/tar';
import { paxHeader, tarGz, zipDeflated, zipStored, type TarEntry } from '../../fixtures/archives';

/**
 * The module proxy's package checks and repacking (src/mirror/modules/repack.ts)
 * on archives built by the test fixtures' own ustar/zip writers: what
 * publish-module refuses is refused, the result is deterministic, GitHub's
 * top-level directory and a //subdir are handled, and the docs are read.
 */
const LIMITS = { maxUnpackedBytes: 1024 * 1024 };
const repack = (bytes: Uint8Array, options: { stripTop?: boolean; subdir?: string; format?: 'tar.gz' | 'zip' } = {}) =>
  repackModule(bytes, options.format ?? 'tar.gz', { stripTop: options.stripTop ?? false, subdir: options.subdir ?? '', label: 'pkg', ...LIMITS });
const gunzip = async (bytes: Uint8Array) =>
  new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer());
const names = async (bytes: Uint8Array) => readTar(await gunzip(bytes)).map((e) => e.name);

const MAIN = 'variable "name" {\n  description = "The \\"name\\""\n  type = string\n}\n\noutput "id" {\n  value = var.name # the id\n  sensitive = true\n}\n';

describe('repackModule', () => {
  it("strips GitHub's top-level directory, sorts, keeps links to files as their bytes, drops links leaving the package", async () => {
    const entries: TarEntry[] = [
      { name: 'repo-1.0.0/', type: '5' },
      { name: 'repo-1.0.0/variables.tf', content: 'variable "b" {}\n' },
      { name: 'repo-1.0.0/main.tf', content: MAIN },
      { name: 'repo-1.0.0/README.md', content: '# <script>x</script>' },
      { name: 'repo-1.0.0/link.md', type: '2', link: 'README.md' },
      { name: 'repo-1.0.0/escape', type: '2', link: '../../etc/passwd' },
      { name: 'repo-1.0.0/.git/config', content: 'x' },
      { name: 'repo-1.0.0/terraform.tfstate', content: '{}' },
    ];
    const repacked = await repack(await tarGz(entries), { stripTop: true });
    expect(await names(repacked.bytes)).toEqual(['README.md', 'link.md', 'main.tf', 'variables.tf']);
    const again = await repack(await tarGz([...entries].reverse()), { stripTop: true });
    expect(again.bytes).toEqual(repacked.bytes); // the same files give the same bytes, whatever their order
    const docs = proxiedModuleDocs(repacked.texts);
    expect(docs.inputs.map((i) => [i.name, i.description, i.type, i.required])).toEqual([
      ['b', null, null, true],
      ['name', 'The "name"', 'string', true],
    ]);
    expect(docs.outputs).toEqual([{ name: 'id', description: null, sensitive: true }]);
    expect(docs.readmeHtml).toBe('<h1>x</h1>\n'); // the README's own tags dropped, its text kept
  });

  it("reads a link's target from its pax linkpath or GNU long link, not the ustar field: one leaving the package is dropped", async () => {
    for (const hidden of [paxHeader({ linkpath: '../../../../etc/passwd' }), { name: '././@LongLink', type: 'K', content: '../../../../etc/passwd\0' }]) {
      const repacked = await repack(await tarGz([{ name: 'main.tf', content: MAIN }, hidden, { name: 'x.tf', type: '2', link: 'main.tf' }]));
      expect(await names(repacked.bytes)).toEqual(['main.tf']); // not x.tf with main.tf's bytes
    }
  });

  it('narrows to a //subdir', async () => {
    const bytes = await tarGz([
      { name: 'r/modules/a/main.tf', content: MAIN },
      { name: 'r/main.tf', content: MAIN },
    ]);
    expect(await names((await repack(bytes, { stripTop: true, subdir: 'modules/a' })).bytes)).toEqual(['main.tf']);
    await expect(repack(bytes, { stripTop: true, subdir: 'modules/b' })).rejects.toThrow(/has no subdirectory modules\/b/);
  });

  it('reads a zip as well', async () => {
    expect(await names((await repack(zipStored({ 'main.tf': MAIN, 'modules/x/main.tf': MAIN }), { format: 'zip' })).bytes)).toEqual([
      'main.tf',
      'modules/x/main.tf',
    ]);
  });

  const refusals: [string, Promise<Uint8Array>, RegExp][] = [
    [
      'a ".." path',
      tarGz([
        { name: 'main.tf', content: MAIN },
        { name: '../evil.tf', content: 'x' },
      ]),
      /has a "\.\." path segment/,
    ],
    [
      'an absolute path',
      tarGz([
        { name: 'main.tf', content: MAIN },
        { name: '/etc/evil.tf', content: 'x' },
      ]),
      /has an absolute path/,
    ],
    [
      'a character device',
      tarGz([
        { name: 'main.tf', content: MAIN },
        { name: 'dev', type: '3' },
      ]),
      /is a character device/,
    ],
    [
      'a FIFO',
      tarGz([
        { name: 'main.tf', content: MAIN },
        { name: 'fifo', type: '6' },
      ]),
      /is a FIFO/,
    ],
    ['a damaged header (its checksum)', tarGz([{ name: 'main.tf', content: MAIN, badChecksum: true }]), /a header checksum does not match/],
    ['no .tf at the root', tarGz([{ name: 'sub/main.tf', content: MAIN }]), /has no \.tf or \.tofu file at its root/],
    ['more than the unpacked limit', tarGz([{ name: 'main.tf', content: 'x'.repeat(1024 * 1024 + 1) }]), /unpacks to more than 1048576 bytes/],
    ['not gzip', Promise.resolve(new TextEncoder().encode('<html>')), /not a valid tar\.gz archive/],
  ];
  for (const [what, bytes, message] of refusals) {
    it(`refuses ${what} with an InputError naming the package`, async () => {
      const error = await repack(await bytes).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      expect((error as Error).message).toMatch(/^pkg: /);
      expect((error as Error).message).toMatch(message);
    });
  }

  it('repacks a zip to the bytes it always gave (mode 0644, directories left out, backslashes as separators, deflated or stored)', async () => {
    const deflated = await zipDeflated({ 'main.tf': MAIN, 'sub/': '', 'sub\\b.tf': 'variable "b" {}\n' });
    const stored = zipStored({ 'main.tf': MAIN, 'sub/': '', 'sub\\b.tf': 'variable "b" {}\n' });
    const hex = async (bytes: Uint8Array) =>
      [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
    const repacked = await repack(deflated, { format: 'zip' });
    expect(await names(repacked.bytes)).toEqual(['main.tf', 'sub/b.tf']);
    expect(readTar(await gunzip(repacked.bytes)).map((e) => e.mode)).toEqual([0o644, 0o644]);
    // Pinned by the proxy's own unzip loop, before it read zips with the shared reader (issue 28).
    expect(await hex(repacked.bytes)).toBe('04eec6dee503d3e1e694e9b01df2b34cbed9862f7c3c0ae9dff058e8f4df777d');
    expect((await repack(stored, { format: 'zip' })).bytes).toEqual(repacked.bytes);
  });

  /** `zip` with the central directory header of its `n`th entry (1-based) changed by `patch` (its offset). */
  function patchCentral(zip: Uint8Array, n: number, patch: (view: DataView, at: number) => void): Uint8Array {
    const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
    let seen = 0;
    for (let at = 0; at + 4 <= zip.byteLength; at++) {
      if (view.getUint32(at, true) === 0x02014b50 && ++seen === n) {
        patch(view, at);
        return zip;
      }
    }
    throw new Error(`no central directory entry ${n}`);
  }

  // What the proxy's own unzip loop read before it went through the shared reader (issue 28).
  const zipRefusals: [string, () => Promise<Uint8Array>, RegExp][] = [
    [
      'two entries sharing their bytes (a zip bomb by overlap)',
      async () => patchCentral(zipStored({ 'main.tf': MAIN, 'b.tf': MAIN }), 2, (view, at) => view.setUint32(at + 42, 0, true)),
      /entry "(main|b)\.tf" overlaps the entry stored before it; rebuild the zip$/,
    ],
    [
      'an entry whose data runs into the central directory',
      async () =>
        patchCentral(zipStored({ 'main.tf': MAIN }), 1, (view, at) => {
          // Both sizes (a stored entry's are equal), 8 bytes into the directory that follows.
          view.setUint32(at + 20, view.getUint32(at + 20, true) + 8, true);
          view.setUint32(at + 24, view.getUint32(at + 24, true) + 8, true);
        }),
      /entry "main\.tf" runs past the end of the file's entries \(into its central directory\); rebuild the zip$/,
    ],
    [
      "a directory entry's damaged local header",
      async () => {
        const zip = zipStored({ 'sub/': '', 'main.tf': MAIN });
        new DataView(zip.buffer).setUint32(0, 0, true);
        return zip;
      },
      /entry "sub\/" has a damaged local header; rebuild the zip$/,
    ],
    [
      'files over the unpacked limit by their headers (nothing inflated)',
      async () => zipStored({ 'main.tf': MAIN, 'big.bin': 'x'.repeat(1024 * 1024) }),
      /unpacks to more than 1048576 bytes, over the module proxy's limit$/,
    ],
    [
      'a deflated entry that inflates to more than its headers say',
      () => zipDeflated({ 'main.tf': MAIN }, { 'main.tf': 10 }),
      /entry "main\.tf" cannot be read \(does not inflate to the 10 bytes its header says: .+\); rebuild the zip$/,
    ],
  ];
  for (const [what, bytes, message] of zipRefusals) {
    it(`refuses a zip with ${what}, with an InputError naming the package`, async () => {
      const error = await repack(await bytes(), { format: 'zip' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      expect((error as Error).message).toMatch(/^pkg: /);
      expect((error as Error).message).toMatch(message);
    });
  }

  it('refuses a truncated tar', async () => {
    const whole = await gunzip(await tarGz([{ name: 'main.tf', content: MAIN.repeat(20) }]));
    const cut = new Uint8Array(await new Response(new Blob([whole.subarray(0, 700)]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer());
    await expect(repack(cut)).rejects.toThrow(/truncated/);
  });
});

describe('renderReadme', () => {
  it("renders Markdown, and no markup of the README's own: raw HTML reduced to text, unsafe links and images dropped", () => {
    const html = renderReadme(
      [
        '# Title',
        '',
        'Some *text* with `code` and [docs](https://example.com/a?b=1&c="2") and [rel](docs/x.md).',
        '',
        '<script>alert(1)</script>',
        '',
        '<img src=x onerror=alert(1)> inline <b onclick="x">b</b>',
        '',
        '[js](javascript:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=) [proto](//evil.example/x)',
        '',
        '![ok](https://img.example/a.png) ![local](./a.png) ![js](javascript:alert(1))',
        '',
        '| a | b |',
        '| - | - |',
        '| 1 | 2 |',
      ].join('\n'),
    );
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<em>text</em>');
    expect(html).toContain('<a href="https://example.com/a?b=1&amp;c=&quot;2&quot;">docs</a>');
    expect(html).toContain('<a href="docs/x.md">rel</a>');
    expect(html).toContain('<table>');
    expect(html).toContain('<img src="https://img.example/a.png" alt="ok">');
    expect(html).not.toMatch(/<(script|b |img src=x)/);
    expect(html).not.toMatch(/<[^>]*\son[a-z]+=/);
    expect(html).not.toMatch(/(href|src)="(javascript|data|\/\/|\.\/)/);
    expect(html).toContain('<p>js data proto</p>'); // the link texts stay
    expect(html).not.toContain('alert(1)</'); // a script block's content is dropped, not shown
  });

  it("reduces a README's own HTML to what a reader needs: its text, http(s) images and line breaks", () => {
    const html = renderReadme(
      [
        '<!-- BEGIN_TF_DOCS -->',
        '<p align="center"><img src="https://img.example/logo.png?a=1&amp;b=2" alt="Logo &quot;x&quot;" width="100" onload="alert(1)"></p>',
        '',
        '<details><summary>More inputs</summary>',
        '',
        'Some *detail*',
        '',
        '</details>',
        '',
        'Line one<br/>line two <span style="color:red">red</span> <a href="javascript:alert(1)">link text</a>',
        '',
        '<div><img src=javascript:alert(1)><img src="//evil.example/x"><style>p{}</style><svg onload=alert(2)><script>x()</script></div>',
        '<!-- END_TF_DOCS -->',
        '',
        '1 < 2 & 3 > 2',
      ].join('\n'),
    );
    expect(html).not.toMatch(/TF_DOCS|<!--/);
    expect(html).toContain('<img src="https://img.example/logo.png?a=1&amp;b=2" alt="Logo &quot;x&quot;">');
    expect(html).toContain('More inputs');
    expect(html).toContain('<em>detail</em>');
    expect(html).toContain('Line one<br>line two red link text');
    expect(html).toContain('1 &lt; 2 &amp; 3 &gt; 2');
    // Every tag left is one of ours: no attribute other than an image's src and alt, no script, style, svg or unsafe src.
    const tags = [...html.matchAll(/<\/?([a-z0-9]+)([^>]*)>/g)];
    expect(tags.length).toBeGreaterThan(0);
    for (const [tag, name, rest] of tags) {
      expect(['p', 'em', 'br', 'img'], tag).toContain(name);
      if (name === 'img') expect(rest, tag).toMatch(/^ src="https:\/\/[^"]*" alt="[^"]*"$/);
      else expect(rest, tag).toBe('');
    }
    expect(html).not.toMatch(/x\(\)|p\{\}|alert\(2\)|evil/);
  });

  it('reads every link and image target with the URL parser: no javascript: in disguise, no protocol-relative host (issue 26)', () => {
    const dropped = [
      '<java\tscript:alert(1)>',
      '<\u0001javascript:alert(1)>',
      'jav&#x61;script:alert(1)',
      '&#106;avascript:alert(1)',
      'javascript&colon;alert(1)',
      'java&Tab;script:alert(1)',
      'JaVaScRiPt:alert(1)',
      ' javascript:alert(1)',
      'vbscript:msgbox(1)',
      'data:text/html,x',
      '//evil.example/x',
      '<\\\\\\\\evil.example/x>',
      '</\\evil.example/x>', // Markdown: \\\\ is one backslash
    ];
    for (const target of dropped) {
      const html = renderReadme(`[x](${target}) ![i](${target})`);
      expect(html, target).toBe('<p>x i</p>\n'); // the texts stay, no tag of a link or image
    }
    // A newline ends a Markdown link destination (no link at all); in raw HTML it is a target like the others.
    expect(renderReadme('[x](<java\nscript:alert(1)>)')).not.toMatch(/<a|href/);
    expect(renderReadme('<img src="java\nscript:alert(1)"><img src="  https://x.example/a.png">')).toBe('<p><img src="https://x.example/a.png" alt=""></p>\n');
    // Images load only from absolute http(s) URLs; relative links stay on our own pages.
    expect(renderReadme('![i](docs/a.png) ![j](/a.png)')).toBe('<p>i j</p>\n');
    expect(renderReadme('<img src="//evil.example/a.png"><img src="jav&#x61;script:alert(1)"><img src="java\tscript:x">')).not.toMatch(/<img/);
    expect(renderReadme('[a](docs/x.md) [b](/abs) [c](#top) [d](?q=1)')).toBe(
      '<p><a href="docs/x.md">a</a> <a href="/abs">b</a> <a href="#top">c</a> <a href="?q=1">d</a></p>\n',
    );
    expect(renderReadme('[m](mailto:a@example.com) [h](HTTPS://example.com/) [e](https://example.com/?a=1&amp;b=2)')).toBe(
      '<p><a href="mailto:a@example.com">m</a> <a href="HTTPS://example.com/">h</a> <a href="https://example.com/?a=1&amp;b=2">e</a></p>\n',
    );
  });

  it('renders a README of at most 1 MiB (MAX_README_BYTES, counted in UTF-8 bytes); a larger one is a note, not rendered', async () => {
    const note = /README\.md is larger than the 1 MiB this registry renders on its pages; read it in the module package/;
    expect(renderReadme(`# a\n${'x'.repeat(MAX_README_BYTES - 4)}`)).not.toMatch(note);
    expect(renderReadme(`# a\n${'x'.repeat(MAX_README_BYTES - 3)}`)).toMatch(note);
    // 600,000 two-byte characters: under the cap in UTF-16 units, over it in bytes.
    expect(renderReadme('é'.repeat(600_000))).toMatch(note);
    // The module proxy, from a package: a 2 MiB README is decoded only up to the cap and becomes the note.
    const big = 'a'.repeat(2 * 1024 * 1024);
    const repacked = await repackModule(
      await tarGz([
        { name: 'main.tf', content: MAIN },
        { name: 'README.md', content: big },
      ]),
      'tar.gz',
      {
        stripTop: false,
        subdir: '',
        label: 'pkg',
        maxUnpackedBytes: 8 * 1024 * 1024,
      },
    );
    expect(repacked.texts.get('README.md')!.length).toBeLessThanOrEqual(MAX_README_BYTES + 4);
    expect(proxiedModuleDocs(repacked.texts).readmeHtml).toMatch(note);
  });
});
