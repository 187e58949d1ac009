import { describe, expect, it } from 'vitest';
import { renderReadme } from '../../../src/http/readme';
import { parseModuleManifest } from '../../../src/routes/publish/module-manifest';

const manifest = (readme: unknown) => ({
  format: 'tar.gz',
  size: 10,
  sha256: 'a'.repeat(64),
  readme,
  docs: { inputs: [], outputs: [], providers: [], requiredVersion: null, submodules: [] },
});

describe("the publish API's module README", () => {
  it('is rendered by the one README renderer, as publish-module and the module proxy render it', () => {
    const readme = '# Title\n\n[docs](https://example.com) [x](<java\tscript:alert(1)>) <b onclick="alert(1)">b</b>\n';
    const html = parseModuleManifest(manifest(readme)).docs.readmeHtml;
    expect(html).toBe(renderReadme(readme));
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<a href="https://example.com">docs</a>');
    expect(html).not.toMatch(/script:|onclick|<b/);
  });

  it('no README, or only white space, is none', () => {
    expect(parseModuleManifest(manifest(null)).docs.readmeHtml).toBeNull();
    expect(parseModuleManifest(manifest(' \n')).docs.readmeHtml).toBeNull();
  });
});
