import { describe, expect, it } from 'vitest';
import entry from '../../fixtures/production/dev-entry';
import { bindings, ORIGIN } from './scenario';

// The `wrangler dev` entry of the production harness (test/fixtures/production/dev-entry.ts; the end-to-end run
// is test/e2e/production-inits.test.ts): the location a request runs at, and the control route's guard.

const send = (path: string, vars: Record<string, string>, init?: RequestInit, origin = ORIGIN) =>
  entry.fetch(new Request(new URL(path, origin), init), { ...bindings, ...vars } as never);
const state = async () =>
  (await (await send('/__production/state', { PRODUCTION_CONTROL: 'on' })).json()) as { invocations: { location: string; path: string; status: number }[] };

describe('the production harness entry for wrangler dev', () => {
  it('has no control route unless PRODUCTION_CONTROL is on: the path is the Worker’s like any other', async () => {
    for (const vars of [{}, { PRODUCTION_CONTROL: 'off' }] as Record<string, string>[]) {
      expect((await send('/__production/state', vars)).status).toBe(404);
      expect((await send('/__production/clock?advance=60000', vars, { method: 'POST' })).status).toBeGreaterThanOrEqual(400);
    }
    const seen = (await state()).invocations.map((i) => i.path);
    expect(seen.filter((path) => path.startsWith('/__production/'))).toHaveLength(4); // all four reached the Worker, as invocations
  });

  it('runs each request at the location its header names, else its port’s location, else A; the clock moves only by a valid advance', async () => {
    const ports = { PRODUCTION_PORTS: '20001=B, 20002=C' };
    await send('/v1/providers/acme/devwhere/versions', { ...ports }, { headers: { 'x-production-location': 'Z' } }, 'https://localhost:20002');
    await send('/v1/providers/acme/devwhere/versions', { ...ports }, undefined, 'https://localhost:20001');
    await send('/v1/providers/acme/devwhere/versions', { ...ports }, undefined, 'https://localhost:20003');
    const where = (await state()).invocations.filter((i) => i.path.endsWith('/devwhere/versions')).map((i) => i.location);
    expect(where).toEqual(['Z', 'B', 'A']);
    expect((await send('/__production/clock?advance=-5', { PRODUCTION_CONTROL: 'on' }, { method: 'POST' })).status).toBe(400);
    const before = (await (await send('/__production/clock?advance=0', { PRODUCTION_CONTROL: 'on' }, { method: 'POST' })).json()) as { now: number };
    const after = (await (await send('/__production/clock?advance=60000', { PRODUCTION_CONTROL: 'on' }, { method: 'POST' })).json()) as { now: number };
    expect(after.now - before.now).toBeGreaterThanOrEqual(60_000);
  });
});
