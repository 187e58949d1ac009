import { describe, expect, it } from 'vitest';
import { devPort, emptyStateHint } from '../../scripts/lib/dev/hint';

describe('npm start on an empty state (scripts/lib/dev/hint.ts)', () => {
  it('names the URL on the port wrangler dev will listen on', () => {
    expect(emptyStateHint([])).toContain('Then try http://localhost:8787/v1/providers/demo/example/versions');
    expect(emptyStateHint(['--port', '9000', '--var', 'ACCESS:private'])).toContain('http://localhost:9000/v1/providers/demo/example/versions');
    expect(devPort(['--port=8123'])).toBe('8123');
    expect(devPort(['--port', '1', '--port=2'])).toBe('2');
    expect(devPort(['--var', 'X:--port'])).toBe('8787');
  });
});
