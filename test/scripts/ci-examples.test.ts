import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * examples/github-actions/: every workflow is valid YAML with the shape
 * GitHub Actions runs (on, jobs, runs-on, steps with uses or run), names in
 * the README every secret it uses, and runs our npm scripts with options
 * they take. The release workflows are keyless (only `id-token: write`, no
 * registry credential, `--registry`, a trusted publisher that matches them);
 * the mirror sync is the operator's (Cloudflare credentials in a protected
 * environment).
 */
const root = join(import.meta.dirname, '..', '..');
const dir = join(root, 'examples', 'github-actions');
const files = readdirSync(dir).filter((f) => f.endsWith('.yml'));
const readme = readFileSync(join(dir, 'README.md'), 'utf8');
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

interface Workflow {
  name: string;
  on: Record<string, unknown>;
  permissions: Record<string, string>;
  jobs: Record<
    string,
    { 'runs-on': string; environment?: string; steps: { uses?: string; run?: string; with?: Record<string, unknown>; env?: Record<string, string> }[] }
  >;
}

/** The source file of an npm script (`node scripts/run.mjs NAME` runs scripts/NAME.ts; bench and tests use tsx FILE), if it exists. */
function scriptSource(name: string): string | null {
  const command = scripts[name];
  const viaRunner = command && /node scripts\/run\.mjs (\S+)/.exec(command);
  const viaTsx = command && /tsx (\S+\.ts)/.exec(command);
  const file = viaRunner ? `scripts/${viaRunner[1]}.ts` : viaTsx ? viaTsx[1]! : null;
  return file ? readFileSync(join(root, file), 'utf8') : null;
}

describe('examples/github-actions', () => {
  it('has the provider release, module release and mirror sync workflows, each linked from the READMEs', () => {
    expect(files.sort()).toEqual(['mirror-sync.yml', 'module-release.yml', 'provider-release.yml']);
    for (const file of files) expect(readme).toContain(`(${file})`);
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('examples/github-actions/');
  });

  describe.each(files)('%s', (file) => {
    const text = readFileSync(join(dir, file), 'utf8');
    const workflow = parse(text) as Workflow;

    it('parses as a workflow: triggers, jobs on a runner, steps that use an action or run a command', () => {
      expect(typeof workflow.name).toBe('string');
      expect(Object.keys(workflow.on).length).toBeGreaterThan(0);
      for (const job of Object.values(workflow.jobs)) {
        expect(job['runs-on']).toBe('ubuntu-latest');
        expect(job.steps.length).toBeGreaterThan(0);
        for (const step of job.steps) expect(Boolean(step.uses) !== Boolean(step.run), JSON.stringify(step)).toBe(true);
        for (const step of job.steps.filter((s) => s.uses)) expect(step.uses).toMatch(/^[\w-]+\/[\w-]+@v\d+$/);
      }
    });

    it('keeps the GITHUB_TOKEN out of the checkout', () => {
      for (const job of Object.values(workflow.jobs)) {
        for (const step of job.steps.filter((s) => s.uses?.startsWith('actions/checkout@'))) expect(step.with?.['persist-credentials']).toBe(false);
      }
    });

    it('names in its header and the README every secret it uses', () => {
      const used = [...new Set([...text.matchAll(/secrets\.([A-Z0-9_]+)/g)].map((m) => m[1]!))];
      const header = text.slice(0, text.indexOf('\nname:'));
      for (const secret of used) {
        expect(header, `${file} header`).toContain(secret);
        expect(readme, 'README').toContain(secret);
      }
    });
  });

  // Releases publish keyless: the job's OIDC ID token, no Cloudflare credentials, no key, no token.
  describe.each(files.filter((f) => f !== 'mirror-sync.yml'))('%s (keyless)', (file) => {
    const text = readFileSync(join(dir, file), 'utf8');
    const workflow = parse(text) as Workflow;
    const header = text.slice(0, text.indexOf('\nname:'));

    it('grants only contents: read and id-token: write', () => {
      expect(workflow.permissions).toEqual({ contents: 'read', 'id-token': 'write' });
    });

    it('holds no registry credential: no Cloudflare or R2 keys, no signing key, no publish token', () => {
      expect(text).not.toMatch(/CLOUDFLARE_|R2_|SIGNING_KEY|EDGE_REGISTRY_TOKEN|REGISTRY_KV/);
      const used = [...new Set([...text.matchAll(/secrets\.([A-Z0-9_]+)/g)].map((m) => m[1]!))];
      expect(used).toEqual(['EDGE_REGISTRY_CHECKOUT_TOKEN']); // only to read a private tooling repository, and optional
      for (const job of Object.values(workflow.jobs)) for (const step of job.steps) expect(step.env ?? {}).toEqual({});
    });

    it("publishes with --registry https://…, and the header's trusted publisher matches this workflow (file, tags, environment)", () => {
      const runs = Object.values(workflow.jobs)
        .flatMap((job) => job.steps.map((s) => s.run ?? ''))
        .join('\n')
        .replace(/\\\n\s*/g, ' ');
      const calls = [...runs.matchAll(/npm run ([\w-]+) -- ([^\n]+)/g)];
      expect(calls.length).toBe(1);
      const [, script, args] = calls[0]!;
      expect(args).toMatch(/--registry https:\/\/\S+/);
      expect(args).not.toContain('--remote');
      const source = scriptSource(script!)!;
      for (const flag of args!.match(/--[a-z-]+/g) ?? []) expect(source, `npm run ${script} takes ${flag}`).toContain(flag);

      // The header's command, its continuation lines (`\` then `#`) joined.
      const add = /npm run publisher -- add ([^\n]*)/.exec(header.replace(/\\\n#\s*/g, ' '))?.[1];
      expect(add, 'header: npm run publisher -- add …').toBeDefined();
      const publisherSource = scriptSource('publisher')!;
      for (const flag of add!.match(/--[a-z-]+/g) ?? []) expect(publisherSource, `npm run publisher takes ${flag}`).toContain(flag);
      expect(text).toMatch(/^# \.github\/workflows\/release\.yml/);
      expect(add).toContain('--workflow release.yml');
      expect(add).toContain("--ref 'refs/tags/v*'");
      const environments = Object.values(workflow.jobs).map((job) => job.environment);
      expect(environments).toEqual(['release']);
      expect(add).toContain('--environment release');
      // Pinned to the repository's immutable ids (a recreated repository of the same name has others).
      expect(add).toMatch(/--repository-id \d+ --owner-id \d+/);
      expect(Object.keys(workflow.on)).toEqual(['push']);
      expect(String((workflow.on.push as { tags: string[] }).tags[0])).toMatch(/^v\*/);
    });
  });

  describe('mirror-sync.yml (operator: Cloudflare credentials in a protected environment)', () => {
    const text = readFileSync(join(dir, 'mirror-sync.yml'), 'utf8');
    const workflow = parse(text) as Workflow;

    it('grants the GITHUB_TOKEN read-only access; reads secrets only in the protected environment', () => {
      expect(workflow.permissions).toEqual({ contents: 'read' });
      expect([...text.matchAll(/secrets\.([A-Z0-9_]+)/g)].length).toBeGreaterThan(0);
      for (const job of Object.values(workflow.jobs)) expect(job.environment).toBe('registry');
    });

    it('runs our npm scripts with --remote --env production and options the scripts take', () => {
      const runs = Object.values(workflow.jobs)
        .flatMap((job) => job.steps.map((s) => s.run ?? ''))
        .join('\n')
        .replace(/\\\n\s*/g, ' ');
      const calls = [...runs.matchAll(/npm run ([\w-]+) -- ([^\n]+)/g)];
      expect(calls.length).toBe(1);
      for (const [, script, args] of calls) {
        expect(args).toContain('--remote --env production');
        const source = scriptSource(script!)!;
        for (const flag of args!.match(/--[a-z-]+/g) ?? []) expect(source, `npm run ${script} takes ${flag}`).toContain(flag);
      }
    });
  });
});
