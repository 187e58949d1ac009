import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../../src/env';
import { moduleAddress } from '../../../src/protocol/modules-v1';
import { hostBlock, snippetAddress } from '../../../src/pages/snippets';
import { seedModule } from '../../fixtures/modules';
import { address, fakeRelease, get, seed } from '../helpers';

// The one address rule of every snippet (src/pages/snippets.ts), on every page that shows an address,
// for each way a person can reach the registry. Real `terraform init` with these snippets: test/e2e/pages-browser.test.ts.
const bindings = env as unknown as Env;
const HTML = { headers: { accept: 'text/html' } };
const unescape = (html: string) =>
  html
    .replace(/&quot;/g, '"')
    .replace(/&gt;/g, '>')
    .replace(/&lt;/g, '<')
    .replace(/&amp;/g, '&');

async function text(url: string): Promise<string> {
  const response = await get(url, HTML);
  expect(response.status, url).toBe(200);
  return unescape(await response.text());
}

beforeAll(async () => {
  await seed([fakeRelease(address('rule', 'thing'), '1.4.0', ['linux_amd64'])]);
  await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, moduleAddress(bindings.REGISTRY_HOSTNAME, 'rule', 'net', 'aws'), '3.1.0');
});

describe('snippetAddress: which host a snippet names', () => {
  it.each([
    // browsed URL, source host, host block's origin (null: none), mirror credentials host
    ['https://registry.example.com/x', 'registry.example.com', null],
    ['https://edge-registry.acme.workers.dev/x', 'edge-registry.acme.workers.dev', null],
    ['https://127.0.0.1:8443/x', '127.0.0.1:8443', null],
    ['https://localhost:8443/x', 'registry.example.com', 'https://localhost:8443'],
    ['http://localhost:8799/x', 'registry.example.com', 'http://localhost:8799'],
    ['http://registry.test:8787/x', 'registry.example.com', 'http://registry.test:8787'],
    ['https://[::1]:8443/x', 'registry.example.com', 'https://[::1]:8443'],
  ])('%s → %s', (url, sourceHost, blockOrigin) => {
    const rule = snippetAddress(new URL(url), 'Registry.Example.com');
    expect(rule.sourceHost).toBe(sourceHost);
    expect(rule.origin).toBe(new URL(url).origin);
    expect(rule.browsedHost).toBe(new URL(url).host);
    expect(rule.hostBlock).toBe(blockOrigin === null ? null : hostBlock('registry.example.com', blockOrigin));
  });

  it('the host block sends both registry services to the browsed origin, scheme and port included', () => {
    expect(hostBlock('registry.example.com', 'http://localhost:8799')).toBe(`host "registry.example.com" {
  services = {
    "modules.v1"   = "http://localhost:8799/v1/modules/"
    "providers.v1" = "http://localhost:8799/v1/providers/"
  }
}
`);
  });
});

describe('every page names the same address', () => {
  it('browsed at http://localhost:8799: REGISTRY_HOSTNAME everywhere, one host block to http://localhost:8799, the mirror at its real (http) URL with the https note', async () => {
    const origin = 'http://localhost:8799';
    const provider = await text(`${origin}/providers/rule/thing`);
    expect(provider).toContain('source  = "registry.example.com/rule/thing"');
    expect(provider).toContain(hostBlock('registry.example.com', origin));
    expect(provider).toContain(`url = "${origin}/v1/mirror/"`);
    expect(provider).toContain('accept a network mirror only at an <code>https:</code> URL');
    expect(provider).toContain('<dt>Source address</dt><dd><code>registry.example.com/rule/thing</code>');
    expect(provider).not.toMatch(/localhost:8799\/rule\/|https:\/\/localhost/);

    const modulePage = await text(`${origin}/modules/rule/net/aws`);
    expect(modulePage).toContain('source  = "registry.example.com/rule/net/aws"');
    expect(modulePage).toContain(hostBlock('registry.example.com', origin));
    expect(await text(`${origin}/modules`)).toContain('<div class="addr">registry.example.com/rule/net/aws</div>');
    expect(await text(`${origin}/`)).toContain('<div class="addr">registry.example.com/rule/thing</div>');
  });

  it('browsed at https://127.0.0.1:8443 (a dotted host over HTTPS): that host everywhere, no host block, no mirror note', async () => {
    const origin = 'https://127.0.0.1:8443';
    const provider = await text(`${origin}/providers/rule/thing`);
    expect(provider).toContain('source  = "127.0.0.1:8443/rule/thing"');
    expect(provider).toContain(`url = "${origin}/v1/mirror/"`);
    expect(provider).not.toContain('host "');
    expect(provider).not.toContain('accept a network mirror only');
    expect(await text(`${origin}/modules/rule/net/aws`)).toContain('source  = "127.0.0.1:8443/rule/net/aws"');
    expect(await text(`${origin}/modules`)).toContain('<div class="addr">127.0.0.1:8443/rule/net/aws</div>');
    expect(await text(`${origin}/`)).toContain('<div class="addr">127.0.0.1:8443/rule/thing</div>');
  });

  it('a mirrored provider keeps its real address whatever the host (only the mirror URL follows the browsed origin)', async () => {
    await seed([fakeRelease(address('hashicorp', 'null', 'registry.terraform.io'), '3.2.0', ['linux_amd64'])]);
    const page = await text('http://localhost:8799/mirror/registry.terraform.io/hashicorp/null');
    expect(page).toContain('source  = "registry.terraform.io/hashicorp/null"');
    expect(page).toContain('url = "http://localhost:8799/v1/mirror/"');
    expect(page).not.toContain('host "');
  });
});
