import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { envArg, mergeVars, startProblems, startRefusal, varArgs } from '../../scripts/lib/dev/preflight';
import { root, tempDir } from './helpers';

/**
 * `npm start` refuses a registry the Worker could not run with, before wrangler dev starts: the Worker's
 * own parser (src/config.ts configProblems) on the variables wrangler dev would pass it, each problem
 * naming the setting, where it is set, and the fix — never the value.
 */

const run = promisify(execFile);

describe('npm start pre-flight (scripts/lib/dev/preflight.ts)', () => {
  it('npm start with a short URL_SIGNING_SECRET and a LOGIN_POLICY on __proto__ exits 1 naming both, starts nothing, writes nothing', {
    timeout: 120_000,
  }, async () => {
    const secret = 'tooShort-Secret-42';
    const devVarsBefore = existsSync(join(root, '.dev.vars')) ? readFileSync(join(root, '.dev.vars'), 'utf8') : null;
    const result = await run(
      process.execPath,
      [
        join(root, 'scripts', 'run.mjs'),
        'start',
        '--port',
        '1', // never reached: wrangler dev would fail to listen there
        '--var',
        `URL_SIGNING_SECRET:${secret}`,
        '--var',
        'OIDC_ISSUER:https://id.example.com',
        '--var',
        'OIDC_CLIENT_ID:registry',
        '--var',
        'LOGIN_POLICY:{"rules":[{"if":{"__proto__":"x"},"scopes":["*"]}]}',
      ],
      { cwd: root },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('npm start stopped before starting wrangler dev');
    expect(result.stderr).toContain('URL_SIGNING_SECRET is 18 characters; at least 32 are required: generate one with `openssl rand -base64 32`');
    expect(result.stderr).toContain('LOGIN_POLICY.rules[0].if: "__proto__" cannot be a claim name');
    expect(result.stderr).toContain('(set in --var)');
    expect(result.stderr).not.toContain(secret);
    expect(result.stderr).not.toContain('Ready on');
    // Refused before .dev.vars would be created or changed.
    expect(existsSync(join(root, '.dev.vars')) ? readFileSync(join(root, '.dev.vars'), 'utf8') : null).toBe(devVarsBefore);
  });

  it('reads wrangler.toml, then .dev.vars, then --var, and names where each problem is set', async () => {
    const { dir, cleanup } = tempDir('edge-registry-preflight-');
    try {
      copyFileSync(join(root, 'wrangler.toml'), join(dir, 'wrangler.toml'));
      // The shipped configuration, with npm start's generated secrets: nothing to refuse.
      expect((await startProblems(dir, [])).problems).toEqual([]);
      expect((await startProblems(dir, ['--env', 'production'])).problems).toEqual([]);
      writeFileSync(
        join(dir, 'wrangler.toml'),
        readFileSync(join(dir, 'wrangler.toml'), 'utf8').replace('REGISTRY_HOSTNAME = "registry.example.com"', 'REGISTRY_HOSTNAME = "not a host"'),
      );
      writeFileSync(join(dir, '.dev.vars'), `URL_SIGNING_SECRET=${'s'.repeat(43)}\nSIGNING_KEY_SECRET=short\n`);
      const { problems, sources } = await startProblems(dir, ['--var', 'ACCESS:private']);
      expect(problems.map((p) => p.setting)).toEqual(['REGISTRY_HOSTNAME', 'SIGNING_KEY_SECRET']);
      const refusal = startRefusal(problems, sources);
      expect(refusal).toContain('REGISTRY_HOSTNAME in wrangler.toml: hostname "not a host" is not a valid registry hostname (set in wrangler.toml)');
      expect(refusal).toContain('SIGNING_KEY_SECRET is 5 characters; at least 32 are required');
      expect(refusal).toContain('(set in .dev.vars)');
      // --var overrides .dev.vars: a good value there clears the problem.
      expect((await startProblems(dir, ['--var', `SIGNING_KEY_SECRET:${'k'.repeat(32)}`, '--var=REGISTRY_HOSTNAME:r.example.com'])).problems).toEqual([]);
    } finally {
      cleanup();
    }
  });

  it('parses --var and --env as wrangler dev does', () => {
    expect(varArgs(['--var', 'A:1', '--port', '9', '--var=B:https://x:1', '--var', 'nocolon'])).toEqual({ A: '1', B: 'https://x:1' });
    expect([envArg([]), envArg(['--env', 'production']), envArg(['-e', 'staging']), envArg(['--env=x'])]).toEqual([undefined, 'production', 'staging', 'x']);
    expect(
      mergeVars([
        ['wrangler.toml', { A: '1', B: '1' }],
        ['--var', { B: '2' }],
      ]),
    ).toEqual({ vars: { A: '1', B: '2' }, sources: { A: 'wrangler.toml', B: '--var' } });
  });
});
