import { env } from 'cloudflare:workers';
import { expect } from 'vitest';
import worker from '../../../src/index';
import type { Env } from '../../../src/env';
import { forgetIsolate } from '../../fixtures/production/forget-isolate';
import { Production, type ProductionOptions } from '../../fixtures/production/production';

export const ORIGIN = 'https://registry.example.com';
export const bindings = env as unknown as Env;

/** The harness around this project's Worker and its Miniflare bindings; each request meets a fresh isolate. */
export function production(options: ProductionOptions = {}): Production<Env> {
  return new Production<Env>(worker as never, bindings, { forgetIsolate: forgetIsolate, vars: { INDEX_CACHE_SECONDS: '0' }, ...options });
}

/** GETs `path` at `location` and returns status and body text. */
export async function at(p: Production<Env>, location: string, path: string, init?: RequestInit): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await p.fetch(location, new Request(new URL(path, ORIGIN), init));
  const textual = /json|text/.test(response.headers.get('content-type') ?? '');
  return { status: response.status, text: textual ? await response.text() : '', headers: response.headers };
}

/**
 * What a client at `location` sees of a provider: every version its list shows must answer its
 * download document for each platform listed, and the document's archive must download. Returns the
 * failures (empty when every listed version installs there).
 */
export async function providerInstallFailures(p: Production<Env>, location: string, namespace: string, type: string): Promise<string[]> {
  const failures: string[] = [];
  const list = await at(p, location, `/v1/providers/${namespace}/${type}/versions`);
  if (list.status === 404) return [];
  if (list.status !== 200) return [`versions ${list.status}`];
  const versions = (JSON.parse(list.text) as { versions: { version: string; platforms: { os: string; arch: string }[] }[] }).versions;
  for (const { version, platforms } of versions) {
    for (const { os, arch } of platforms) {
      const path = `/v1/providers/${namespace}/${type}/${version}/download/${os}/${arch}`;
      const doc = await at(p, location, path);
      if (doc.status !== 200) {
        failures.push(`${location}: ${version} is listed, ${path} answers ${doc.status}`);
        continue;
      }
      const url = new URL((JSON.parse(doc.text) as { download_url: string }).download_url, new URL(path, ORIGIN));
      const archive = await at(p, location, url.href);
      if (archive.status !== 200) failures.push(`${location}: ${version} archive ${url.pathname} answers ${archive.status}`);
    }
  }
  return failures;
}

/** The same for the network mirror: every version in index.json answers its VERSION.json, whose archives download. */
export async function mirrorInstallFailures(
  p: Production<Env>,
  location: string,
  namespace: string,
  type: string,
  hostname = bindings.REGISTRY_HOSTNAME,
): Promise<string[]> {
  const base = `/v1/mirror/${hostname}/${namespace}/${type}`;
  const index = await at(p, location, `${base}/index.json`);
  if (index.status === 404) return [];
  if (index.status !== 200) return [`index.json ${index.status}`];
  const failures: string[] = [];
  for (const version of Object.keys((JSON.parse(index.text) as { versions: Record<string, unknown> }).versions)) {
    const doc = await at(p, location, `${base}/${version}.json`);
    if (doc.status !== 200) {
      failures.push(`${location}: mirror lists ${version}, ${version}.json answers ${doc.status}`);
      continue;
    }
    for (const { url } of Object.values((JSON.parse(doc.text) as { archives: Record<string, { url: string }> }).archives)) {
      const archive = await at(p, location, new URL(url, new URL(`${base}/${version}.json`, ORIGIN)).href);
      if (archive.status !== 200) failures.push(`${location}: mirror ${version} archive answers ${archive.status}`);
    }
  }
  return failures;
}

/** The same for a module: every listed version's download answers 204 with X-Terraform-Get, whose package downloads. */
export async function moduleInstallFailures(p: Production<Env>, location: string, namespace: string, name: string, system: string): Promise<string[]> {
  const base = `/v1/modules/${namespace}/${name}/${system}`;
  const list = await at(p, location, `${base}/versions`);
  if (list.status === 404) return [];
  if (list.status !== 200) return [`module versions ${list.status}`];
  const failures: string[] = [];
  for (const { version } of (JSON.parse(list.text) as { modules: { versions: { version: string }[] }[] }).modules[0]!.versions) {
    const download = await at(p, location, `${base}/${version}/download`);
    if (download.status !== 204) {
      failures.push(`${location}: module lists ${version}, its download answers ${download.status}`);
      continue;
    }
    const archive = await at(p, location, new URL(download.headers.get('x-terraform-get')!, new URL(`${base}/${version}/download`, ORIGIN)).href);
    if (archive.status !== 200) failures.push(`${location}: module ${version} package answers ${archive.status}`);
  }
  return failures;
}

/** No invocation answered 5xx or passed a plan limit. */
export function expectNoFailures(p: Production<Env>): void {
  expect(p.failures()).toEqual([]);
}
