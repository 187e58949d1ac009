import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyStateHint } from '../../scripts/lib/dev/hint';
import { devOrigin, devPort, devStateDir, recordServer, runningServer } from '../../scripts/lib/dev/server';

const dir = mkdtempSync(join(tmpdir(), 'edge-registry-dev-hint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm start on an empty state (scripts/lib/dev/hint.ts)', () => {
  it('names the URL at the address wrangler dev will serve: port and scheme', () => {
    expect(emptyStateHint([])).toContain('Then open http://localhost:8787/ or try http://localhost:8787/v1/providers/demo/example/versions');
    expect(emptyStateHint(['--port', '9000', '--var', 'ACCESS:private'])).toContain('http://localhost:9000/v1/providers/demo/example/versions');
    expect(emptyStateHint(['--port=8799', '--local-protocol', 'https'])).toContain('https://localhost:8799/v1/providers/demo/example/versions');
    expect(devPort(['--port=8123'])).toBe('8123');
    expect(devPort(['--port', '1', '--port=2'])).toBe('2');
    expect(devPort(['--var', 'X:--port'])).toBe('8787');
    expect(devOrigin(['--local-protocol=https'])).toBe('https://localhost:8787');
    expect(devOrigin(['--local-protocol', 'ftp'])).toBe('http://localhost:8787');
  });
});

describe("the running server's address, for hints (scripts/lib/dev/server.ts)", () => {
  it('npm start records its origin in the state it serves while it runs; a dead process or no record reads as none', () => {
    expect(devStateDir('/repo', [])).toBe('/repo/.wrangler/state');
    expect(devStateDir('/repo', ['--persist-to', 'other'])).toBe('/repo/other');
    expect(devStateDir('/repo', ['--persist-to=/abs'])).toBe('/abs');
    const state = join(dir, 'state');
    expect(runningServer(state)).toBeNull();
    const forget = recordServer(state, 'http://localhost:8799');
    expect(runningServer(state)).toBe('http://localhost:8799');
    forget();
    expect(existsSync(join(state, 'edge-registry-server.json'))).toBe(false);
    expect(runningServer(state)).toBeNull();
    recordServer(state, 'http://localhost:8799', 2 ** 22 + 12345); // above Linux's pid_max: no such process
    expect(runningServer(state)).toBeNull();
  });
});
