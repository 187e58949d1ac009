import { describe, expect, it } from 'vitest';
import { chunkedBody } from '../../fixtures/chunked-body';
import { getWith, ORIGIN } from '../helpers';
import { oidcEnv } from './helpers';

// Hostile: the bodies that carry a credential (the sign-in form's token, login.v1's code and verifier) are read
// before anything is authenticated, so their limit must hold while they stream: a chunked body with no
// Content-Length is refused with 413 after little more than the limit was read, never buffered whole.

const HUGE = 64 * 1024 * 1024;

function chunkedPost(path: string, contentType: string, env = oidcEnv()) {
  const { body, pulled } = chunkedBody(HUGE);
  const response = getWith(env, path, {
    method: 'POST',
    headers: { 'content-type': contentType, origin: ORIGIN },
    body,
    duplex: 'half',
  } as RequestInit);
  return { response, pulled };
}

describe('request bodies read before authentication are limited while they stream', () => {
  it('POST /login: a chunked 64 MiB form gets 413 and the form again, after at most 64 KiB was read', async () => {
    const { response, pulled } = chunkedPost('/login', 'application/x-www-form-urlencoded', {} as never);
    const answer = await response;
    expect(answer.status).toBe(413);
    expect(await answer.text()).toContain('The form is too large to be a sign-in.');
    expect(pulled()).toBeLessThanOrEqual(64 * 1024);
  });

  it('POST /oauth/token: a chunked 64 MiB body gets 413 invalid_request, after at most 64 KiB was read', async () => {
    const { response, pulled } = chunkedPost('/oauth/token', 'application/x-www-form-urlencoded');
    const answer = await response;
    expect(answer.status).toBe(413);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const body = await answer.json<{ error: string; error_description: string }>();
    expect(body).toEqual({ error: 'invalid_request', error_description: 'the request body is over 8192 bytes; at most 8192 are accepted here' });
    expect(pulled()).toBeLessThanOrEqual(64 * 1024);
  });

  it('POST /oauth/token: a declared Content-Length over the limit is refused before anything is read', async () => {
    const { body, pulled } = chunkedBody(HUGE);
    const answer = await getWith(oidcEnv(), '/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(HUGE) },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(answer.status).toBe(413);
    expect(pulled()).toBe(0);
  });
});
