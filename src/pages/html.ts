import { escapeHtml } from '../http/escape-html';

/**
 * Escaping by default: `html` is a tagged template whose interpolations are
 * HTML-escaped unless they are already Html (built by `html` itself) —
 * arrays are joined, null/undefined/false render nothing. Everything a
 * publisher wrote (names, descriptions) therefore renders as text.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type Interpolation = Html | string | number | boolean | null | undefined | readonly Interpolation[];

// Lives in src/http/ so the module proxy and the publish API escape the same way without importing pages.
export { escapeHtml };

function render(value: Interpolation): string {
  if (value instanceof Html) return value.value;
  if (value === null || value === undefined || value === false || value === true) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** The tagged template: html`<p>${untrusted}</p>` escapes `untrusted`. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Trusted markup as is (only for constants of this code base, never for stored data). */
export const raw = (markup: string): Html => new Html(markup);

/**
 * A path built from segments, each percent-encoded: href values made from
 * stored names can never become `javascript:` or leave this site.
 */
export function path(...segments: string[]): string {
  return `/${segments.map(encodeURIComponent).join('/')}`;
}
