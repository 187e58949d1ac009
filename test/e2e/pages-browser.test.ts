import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishDemo } from '../../scripts/lib/demo/provider';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';
import { launchChromium } from '../fixtures/browser';
import { CHROMIUM, missing, terraform } from '../tools';

/**
 * The pages in a real browser (Debian's chromium driven by playwright-core)
 * against `wrangler dev` with the demo provider, its docs and the demo
 * module, as a newcomer uses them: find the provider, filter, switch version,
 * read a resource's docs, copy snippets — and the copied text is what real
 * `terraform init` then installs from, under the one address rule
 * (src/pages/snippets.ts): over plain HTTP as `npm start` serves (registry
 * hostname + host block; the network mirror refused by Terraform as the page
 * says), over HTTPS at localhost (host block, mirror, private credentials)
 * and at a dotted host (127.0.0.1: the browsed host itself, no host block).
 * Private mode: sign in and out. axe-core checks every page; screenshots
 * (desktop and phone, light and dark) go to test-artifacts/screenshots/
 * (git-ignored).
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const SHOTS = join(root, 'test-artifacts', 'screenshots');
const AXE = readFileSync(join(root, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`browser tests skipped: no ${CHROMIUM} (apt-get install chromium)`);

let dir: string;
let stateDir: string;
let certificate: Certificate;
let browser: Browser;

beforeAll(async () => {
  if (!haveChromium) return;
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-browser-'));
  stateDir = join(dir, 'state');
  await publishDemo({ persistTo: stateDir, keysDir: join(dir, 'keys'), log: () => {} });
  certificate = makeCertificate(dir);
  await mkdir(SHOTS, { recursive: true });
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function newContext(origin: string, options: { phone?: boolean; dark?: boolean } = {}): Promise<BrowserContext> {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true,
    viewport: options.phone ? { width: 390, height: 844 } : { width: 1280, height: 900 },
    deviceScaleFactor: 1,
    colorScheme: options.dark ? 'dark' : 'light',
    isMobile: options.phone ?? false,
    hasTouch: options.phone ?? false,
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  return context;
}

/** Opens a page and records console errors (a CSP violation would show up here). */
async function open(context: BrowserContext, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(url);
  return { page, errors };
}

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[];
}

/** axe-core in the page (evaluated through the DevTools protocol, so the CSP stays on): serious and critical violations. */
async function axe(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate(() => (globalThis as unknown as { axe: { run(): Promise<AxeResult> } }).axe.run())) as AxeResult;
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

async function terraformInit(name: string, files: Record<string, string>): Promise<string> {
  const work = join(dir, 'terraform', name);
  await mkdir(work, { recursive: true });
  for (const [file, text] of Object.entries(files)) await writeFile(join(work, file), text);
  const env = {
    ...process.env,
    SSL_CERT_FILE: certificate.certPath,
    TF_CLI_CONFIG_FILE: join(work, 'cli.tfrc'),
    TF_DATA_DIR: join(work, '.terraform'),
    TF_IN_AUTOMATION: '1',
    CHECKPOINT_DISABLE: '1',
  };
  if (!files['cli.tfrc']) await writeFile(env.TF_CLI_CONFIG_FILE, '');
  let output: string;
  try {
    const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color'], { cwd: work, env, timeout: 120_000 });
    output = stdout + stderr;
  } catch (error) {
    const { stdout, stderr, message } = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`terraform init failed: ${message}\n${stdout}\n${stderr}`);
  }
  // A configuration of modules only installs no provider and writes no lock file.
  const lock = join(work, '.terraform.lock.hcl');
  return output + (existsSync(lock) ? readFileSync(lock, 'utf8') : '');
}

/** Clicks the snippet's Copy button and returns what landed on the clipboard. */
async function copy(page: Page, id: string): Promise<string> {
  await page.click(`button[data-copy="${id}"]`);
  await expect.poll(() => page.locator(`button[data-copy="${id}"]`).textContent()).toBe('Copied');
  return page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText());
}

/** terraform init that is expected to fail: its output. */
async function terraformInitFails(name: string, files: Record<string, string>): Promise<string> {
  try {
    await terraformInit(name, files);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('terraform init succeeded');
}

const DEMO_MODULE = 'registry.example.com/demo/vpc/aws';

describe.skipIf(missing('chromium', haveChromium))('pages in chromium (public registry over HTTP, as npm start serves it)', () => {
  let server: DevServer;

  beforeAll(async () => {
    server = await startDevServer({ stateDir, port: await freePort() });
  }, 120_000);
  afterAll(async () => server?.stop());

  it("finds, filters, switches version, reads a resource's docs; no CSP errors; axe finds nothing serious", async () => {
    const context = await newContext(server.origin);
    const { page, errors } = await open(context, `${server.origin}/`);
    expect(await page.locator('h1').textContent()).toBe('Providers');
    const card = page.locator('li[data-name]', { hasText: 'demo/example' });
    await expect.poll(() => card.isVisible()).toBe(true);
    // Filtering as you type (the script) hides what does not match.
    await page.fill('#filter', 'no-such-provider');
    expect(await card.isVisible()).toBe(false);
    expect(await page.locator('[data-count]').textContent()).toBe('0 providers');
    await page.fill('#filter', 'servers');
    expect(await card.isVisible()).toBe(true);
    const violations = { home: await axe(page) };

    await card.locator('a').click();
    await page.waitForURL(`${server.origin}/providers/demo/example`);
    expect(await page.locator('h1').textContent()).toContain('v1.2.0');
    await page.selectOption('#version', '1.1.0');
    await page.waitForURL(`${server.origin}/providers/demo/example/1.1.0`);
    expect(await page.locator('h1').textContent()).toContain('v1.1.0');
    await page.selectOption('#version', '2.0.0-beta.1');
    await page.waitForURL(/2\.0\.0-beta\.1$/);
    expect(await page.locator('h1').textContent()).toContain('prerelease');
    Object.assign(violations, { version: await axe(page) });

    await page.click('a:text("Resources, data sources and schema")');
    await page.waitForURL(/\/docs$/);
    Object.assign(violations, { docs: await axe(page) });
    await page.click('nav.side a:text("example_server")');
    await page.waitForURL(/\/docs\/resources\/example_server$/);
    expect(await page.locator('h1').textContent()).toContain('example_server');
    expect(await page.locator('.attr', { hasText: 'admin_password' }).first().textContent()).toContain('sensitive');
    Object.assign(violations, { resource: await axe(page) });

    console.log(`axe-core (serious/critical): ${JSON.stringify(violations)}`);
    expect(Object.values(violations).flat()).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  }, 180_000);

  it.skipIf(missing('terraform', terraform))(
    'over HTTP: the copied provider and module snippets with the copied host block are what terraform init installs; the mirror snippet is refused as the page says',
    async () => {
      const context = await newContext(server.origin);
      const { page } = await open(context, `${server.origin}/providers/demo/example`);
      const required = await copy(page, 'snippet-required');
      expect(required).toContain('source  = "registry.example.com/demo/example"');
      expect(required).toContain('version = "~> 1.2"');
      const host = await copy(page, 'snippet-host');
      expect(host).toContain(`"providers.v1" = "${server.origin}/v1/providers/"`);
      const origin = await terraformInit('http-origin', { 'main.tf': required, 'cli.tfrc': host });
      expect(origin).toContain('Installed registry.example.com/demo/example v1.2.0');

      const mirror = await copy(page, 'snippet-mirror');
      expect(mirror).toContain(`url = "${server.origin}/v1/mirror/"`);
      expect(await page.locator('.snippet', { has: page.locator('#snippet-mirror') }).textContent()).toContain('accept a network mirror only at an https: URL');
      expect(await terraformInitFails('http-mirror', { 'main.tf': required, 'cli.tfrc': mirror })).toContain('the mirror must be at an https: URL');

      await page.goto(`${server.origin}/modules`);
      expect(await page.locator('.grid .addr').first().textContent()).toBe(DEMO_MODULE);
      await page.click('a.card');
      await page.waitForURL(`${server.origin}/modules/demo/vpc/aws`);
      const block = await copy(page, 'module-block');
      expect(block).toContain(`source  = "${DEMO_MODULE}"`);
      expect(await copy(page, 'snippet-host')).toBe(host);
      // The demo README names the same address.
      expect(await page.locator('.readme').textContent()).toContain(`source  = "${DEMO_MODULE}"`);
      const modules = await terraformInit('http-module', { 'main.tf': block, 'cli.tfrc': host });
      expect(modules).toContain(`Downloading ${DEMO_MODULE} 1.1.0 for vpc`);
      await context.close();
    },
    240_000,
  );

  it('looks right on a laptop and a phone, light and dark (screenshots): sizes on one line, hashes selected whole, module pages named as such', async () => {
    const pages = {
      home: '/',
      provider: '/providers/demo/example',
      docs: '/providers/demo/example/1.2.0/docs/resources/example_server',
      modules: '/modules',
      module: '/modules/demo/vpc/aws',
    };
    // Page-side code gets its DOM from globalThis (this project type-checks without the DOM library).
    interface Dom {
      document: {
        documentElement: { scrollWidth: number };
        createRange(): { selectNodeContents(n: unknown): void; getClientRects(): { length: number } };
        querySelectorAll(s: string): ArrayLike<{ firstChild: unknown }>;
      };
      getSelection(): { toString(): string } | null;
    }
    for (const phone of [false, true]) {
      for (const dark of [false, true]) {
        const context = await newContext(server.origin, { phone, dark });
        const page = await context.newPage();
        for (const [name, path] of Object.entries(pages)) {
          await page.goto(`${server.origin}${path}`);
          const file = join(SHOTS, `${name}-${phone ? 'phone' : 'desktop'}-${dark ? 'dark' : 'light'}.png`);
          await page.screenshot({ path: file, fullPage: name === 'provider' });
          expect(existsSync(file)).toBe(true);
          // Nothing wider than the viewport on a phone: no sideways scrolling of the page itself.
          if (phone) expect(await page.evaluate(() => (globalThis as unknown as Dom).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
          // The header and breadcrumbs say what the page is: no "provider registry" on module pages, no "Providers / Modules".
          expect(await page.locator('header.site .brand').textContent()).not.toContain('provider registry');
          if (name.startsWith('module')) expect(await page.locator('nav.crumbs').allTextContents()).not.toContainEqual(expect.stringContaining('Providers'));
        }
        // The provider page's platform table: every size on one line ("443 B", never "443 / B"), and one
        // click on a hash selects all of it (copied whole, however the cell wraps it).
        await page.goto(`${server.origin}/providers/demo/example`);
        const sizeLines = await page.evaluate(() =>
          Array.from((globalThis as unknown as Dom).document.querySelectorAll('td.num')).map((td) => {
            const range = (globalThis as unknown as Dom).document.createRange();
            range.selectNodeContents(td.firstChild);
            return range.getClientRects().length;
          }),
        );
        expect(sizeLines.length).toBeGreaterThan(0);
        expect(sizeLines.every((lines) => lines === 1)).toBe(true);
        const hash = page.locator('td.hash .copyable').first();
        await hash.click();
        const hashText = (await hash.textContent())!;
        expect(hashText).toMatch(/^zh:[0-9a-f]{64}$/);
        expect(await page.evaluate(() => (globalThis as unknown as Dom).getSelection()?.toString())).toBe(hashText);
        if (dark && !phone) expect(await axe(page)).toEqual([]);
        await context.close();
      }
    }
  }, 240_000);
});

describe.skipIf(missing('chromium', haveChromium))('pages in chromium (private registry)', () => {
  let server: DevServer;
  let token: string;

  beforeAll(async () => {
    const { stdout } = await run(tsx, ['scripts/token.ts', 'create', '--namespace', 'demo', '--name', 'browser', '--persist-to', stateDir], { cwd: root });
    token = stdout.trimEnd().split('\n').at(-1)!;
    server = await startDevServer({
      stateDir,
      port: await freePort(),
      certificate,
      vars: { ACCESS: 'private', URL_SIGNING_SECRET: 'browser-test-signing-secret-0123456789' },
    });
  }, 120_000);
  afterAll(async () => server?.stop());

  /** Signs in at `origin` (its own cookie) and returns the page on `path`. */
  async function signIn(context: BrowserContext, origin: string, path: string): Promise<Page> {
    const { page } = await open(context, `${origin}${path}`);
    await page.waitForURL(/\/login\?next=/);
    await page.fill('#token', token);
    await page.click('button:text("Sign in")');
    await page.waitForURL(`${origin}${path}`);
    return page;
  }

  it("sends a visitor to sign in, shows the token's providers after, and signs out; at localhost the copied snippets install through the registry, the mirror and the module registry", async () => {
    const context = await newContext(server.origin);
    const { page, errors } = await open(context, `${server.origin}/providers/demo/example`);
    await page.waitForURL(/\/login\?next=/);
    expect(await axe(page)).toEqual([]);
    await page.fill('#token', 'ert_not-a-real-token');
    await page.click('button:text("Sign in")');
    expect(await page.locator('[role=alert]').textContent()).toContain('Not signed in');
    await page.fill('#token', token);
    await page.click('button:text("Sign in")');
    await page.waitForURL(`${server.origin}/providers/demo/example`);
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === '__Host-session')).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax' });
    const credentials = await copy(page, 'snippet-credentials');
    // The registry's name (host block) and the mirror's host and port: Terraform keys mirror credentials by the mirror URL.
    expect(credentials).toBe(
      `credentials "registry.example.com" {\n  token = "ert_…"\n}\n# the network mirror at ${server.origin}/v1/mirror/\ncredentials "localhost:${server.port}" {\n  token = "ert_…"\n}\n`,
    );
    expect(await page.content()).not.toContain(token);
    await page.screenshot({ path: join(SHOTS, 'provider-private-desktop-light.png') });
    if (terraform) {
      const withToken = credentials.replaceAll('ert_…', token);
      const required = await copy(page, 'snippet-required');
      const host = await copy(page, 'snippet-host');
      const mirror = await copy(page, 'snippet-mirror');
      expect(mirror).toContain(`url = "${server.origin}/v1/mirror/"`);
      expect(await terraformInit('private', { 'main.tf': required, 'cli.tfrc': host + withToken })).toContain(
        'Installed registry.example.com/demo/example v1.2.0',
      );
      expect(await terraformInit('private-mirror', { 'main.tf': required, 'cli.tfrc': mirror + withToken })).toContain(
        'Installed registry.example.com/demo/example v1.2.0',
      );
      await page.goto(`${server.origin}/modules/demo/vpc/aws`);
      const block = await copy(page, 'module-block');
      const moduleCredentials = await copy(page, 'snippet-credentials');
      expect(moduleCredentials).toBe('credentials "registry.example.com" {\n  token = "ert_…"\n}\n');
      expect(await copy(page, 'snippet-host')).toBe(host);
      const modules = await terraformInit('private-module', { 'main.tf': block, 'cli.tfrc': host + moduleCredentials.replace('ert_…', token) });
      expect(modules).toContain(`Downloading ${DEMO_MODULE} 1.1.0 for vpc`);
      await page.goto(`${server.origin}/providers/demo/example`);
    }
    await page.click('button:text("Sign out")');
    await page.waitForURL(/\/login$/);
    await page.goto(`${server.origin}/`);
    await page.waitForURL(/\/login\?next=/);
    expect(errors.filter((e) => !e.includes('401'))).toEqual([]);
    await context.close();
  }, 240_000);

  it.skipIf(missing('terraform', terraform))(
    'at a dotted host (https://127.0.0.1:PORT) the snippets name that host, need no host block, and install as copied',
    async () => {
      const origin = `https://127.0.0.1:${server.port}`;
      const context = await newContext(origin);
      const page = await signIn(context, origin, '/providers/demo/example');
      const required = await copy(page, 'snippet-required');
      expect(required).toContain(`source  = "127.0.0.1:${server.port}/demo/example"`);
      expect(await page.locator('#snippet-host').count()).toBe(0);
      const credentials = await copy(page, 'snippet-credentials');
      expect(credentials).toBe(`credentials "127.0.0.1:${server.port}" {\n  token = "ert_…"\n}\n`);
      const cli = credentials.replace('ert_…', token);
      expect(await terraformInit('dotted', { 'main.tf': required, 'cli.tfrc': cli })).toContain(`Installed 127.0.0.1:${server.port}/demo/example v1.2.0`);
      const mirror = await copy(page, 'snippet-mirror');
      const viaMirror = await terraformInit('dotted-mirror', {
        'main.tf': required.replace(`127.0.0.1:${server.port}/demo/example`, 'registry.example.com/demo/example'),
        'cli.tfrc': mirror + cli,
      });
      expect(viaMirror).toContain('Installed registry.example.com/demo/example v1.2.0');
      await page.goto(`${origin}/modules/demo/vpc/aws`);
      const block = await copy(page, 'module-block');
      expect(block).toContain(`source  = "127.0.0.1:${server.port}/demo/vpc/aws"`);
      expect(await terraformInit('dotted-module', { 'main.tf': block, 'cli.tfrc': cli })).toContain(
        `Downloading 127.0.0.1:${server.port}/demo/vpc/aws 1.1.0 for vpc`,
      );
      await context.close();
    },
    240_000,
  );
});
