import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishDemo } from '../../scripts/lib/demo/provider';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';

/**
 * The pages in a real browser (Debian's chromium driven by playwright-core)
 * against `wrangler dev` over HTTPS with the demo provider and its docs, as
 * a newcomer uses them: find the provider, filter, switch version, read a
 * resource's docs, copy a snippet — and the copied text is what real
 * `terraform init` then installs from. Private mode: sign in and out. axe-core
 * checks every page; screenshots (desktop and phone, light and dark) go to
 * test-artifacts/screenshots/ (git-ignored).
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const CHROMIUM = '/usr/bin/chromium';
const terraform = ['/usr/local/bin/terraform', '/usr/bin/terraform'].find((p) => existsSync(p));
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
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run'],
    // playwright gives chromium a fresh temporary --user-data-dir itself (it refuses the flag here).
  });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function newContext(server: DevServer, options: { phone?: boolean; dark?: boolean } = {}): Promise<BrowserContext> {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true,
    viewport: options.phone ? { width: 390, height: 844 } : { width: 1280, height: 900 },
    deviceScaleFactor: 1,
    colorScheme: options.dark ? 'dark' : 'light',
    isMobile: options.phone ?? false,
    hasTouch: options.phone ?? false,
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
  return context;
}

/** Opens a page and records console errors (a CSP violation would show up here). */
async function open(context: BrowserContext, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(url);
  return { page, errors };
}

interface AxeResult { violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] }

/** axe-core in the page (evaluated through the DevTools protocol, so the CSP stays on): serious and critical violations. */
async function axe(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => (globalThis as unknown as { axe: { run(): Promise<AxeResult> } }).axe.run()) as AxeResult;
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
  try {
    const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color'], { cwd: work, env, timeout: 120_000 });
    return stdout + stderr + readFileSync(join(work, '.terraform.lock.hcl'), 'utf8');
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`terraform init failed:\n${stdout}\n${stderr}`);
  }
}

describe.skipIf(!haveChromium)('pages in chromium (public registry, demo provider)', () => {
  let server: DevServer;

  beforeAll(async () => {
    server = await startDevServer({ stateDir, port: await freePort(), certificate });
  }, 120_000);
  afterAll(async () => server?.stop());

  it('finds, filters, switches version, reads a resource\'s docs; no CSP errors; axe finds nothing serious', async () => {
    const context = await newContext(server);
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

  it.skipIf(!terraform)('copies the snippets, and real terraform init installs with exactly that text', async () => {
    const context = await newContext(server);
    const { page } = await open(context, `${server.origin}/providers/demo/example`);
    const copy = async (id: string) => {
      await page.click(`button[data-copy="${id}"]`);
      await expect.poll(() => page.locator(`button[data-copy="${id}"]`).textContent()).toBe('Copied');
      return page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText());
    };
    const required = await copy('snippet-required');
    expect(required).toContain(`source  = "localhost:${server.port}/demo/example"`);
    expect(required).toContain('version = "~> 1.2"');
    const origin = await terraformInit('origin', { 'main.tf': required });
    expect(origin).toContain(`Installed localhost:${server.port}/demo/example v1.2.0`);

    const mirror = await copy('snippet-mirror');
    expect(mirror).toContain(`url = "https://localhost:${server.port}/v1/mirror/"`);
    const viaMirror = await terraformInit('mirror', {
      'cli.tfrc': mirror,
      'main.tf': required.replace(`localhost:${server.port}/demo/example`, 'registry.example.com/demo/example'),
    });
    expect(viaMirror).toContain('Installed registry.example.com/demo/example v1.2.0');
    await context.close();
  }, 240_000);

  it('looks right on a laptop and a phone, light and dark (screenshots)', async () => {
    const pages = { home: '/', provider: '/providers/demo/example', docs: '/providers/demo/example/1.2.0/docs/resources/example_server' };
    for (const phone of [false, true]) {
      for (const dark of [false, true]) {
        const context = await newContext(server, { phone, dark });
        const page = await context.newPage();
        for (const [name, path] of Object.entries(pages)) {
          await page.goto(`${server.origin}${path}`);
          const file = join(SHOTS, `${name}-${phone ? 'phone' : 'desktop'}-${dark ? 'dark' : 'light'}.png`);
          await page.screenshot({ path: file });
          expect(existsSync(file)).toBe(true);
          // Nothing wider than the viewport on a phone: no sideways scrolling of the page itself.
          if (phone) expect(await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
        }
        if (dark && !phone) expect(await axe(page)).toEqual([]);
        await context.close();
      }
    }
  }, 180_000);
});

describe.skipIf(!haveChromium)('pages in chromium (private registry)', () => {
  let server: DevServer;
  let token: string;

  beforeAll(async () => {
    const { stdout } = await run(tsx, ['scripts/token.ts', 'create', '--namespace', 'demo', '--name', 'browser', '--persist-to', stateDir], { cwd: root });
    token = stdout.trimEnd().split('\n').at(-1)!;
    server = await startDevServer({
      stateDir, port: await freePort(), certificate,
      vars: { ACCESS: 'private', URL_SIGNING_SECRET: 'browser-test-signing-secret' },
    });
  }, 120_000);
  afterAll(async () => server?.stop());

  it('sends a visitor to sign in, shows the token\'s providers after, and signs out', async () => {
    const context = await newContext(server);
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
    const credentials = await page.locator('#snippet-credentials').textContent();
    expect(credentials).toBe(`credentials "localhost:${server.port}" {\n  token = "ert_…"\n}\n`);
    expect(await page.content()).not.toContain(token);
    await page.screenshot({ path: join(SHOTS, 'provider-private-desktop-light.png') });
    if (terraform) {
      const required = await page.locator('#snippet-required').textContent();
      const output = await terraformInit('private', { 'main.tf': required!, 'cli.tfrc': credentials!.replace('ert_…', token) });
      expect(output).toContain(`Installed localhost:${server.port}/demo/example v1.2.0`);
    }
    await page.click('button:text("Sign out")');
    await page.waitForURL(/\/login$/);
    await page.goto(`${server.origin}/`);
    await page.waitForURL(/\/login\?next=/);
    expect(errors.filter((e) => !e.includes('401'))).toEqual([]);
    await context.close();
  }, 240_000);
});
