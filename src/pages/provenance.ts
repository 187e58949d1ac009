import type { ProvenanceRef } from '../store/provenance';
import { html, type Html } from './html';

/**
 * The "Provenance" fact of a version page (providers and modules): where a
 * CI-published version was built — "Built from OWNER/REPO@abc1234 by
 * release.yml, run 4242 — verified", linking the commit and the run — or,
 * plainly, that the version has no build provenance. Every value comes from
 * the version's record (verified claims at publish time) and is escaped;
 * only http(s) URLs become links.
 */
export function provenanceFact(ref: ProvenanceRef | undefined, statementUrl: string): Html {
  const s = ref?.kind === 'build' ? ref.summary : undefined;
  if (!s) {
    const why =
      ref?.kind === 'publish'
        ? html`published with a token or the CLI; <a href="${statementUrl}">signed publish attestation</a> only`
        : 'published without a statement';
    return html`<dt>Provenance</dt><dd><span class="muted">No build provenance: ${why}.</span></dd>`;
  }
  const link = (url: string, text: string | Html) => (/^https?:\/\//.test(url) ? html`<a href="${url}">${text}</a>` : html`${text}`);
  return html`<dt>Provenance</dt><dd>Built from ${link(s.commitUrl, `${s.repository}@${s.commit.slice(0, 7)}`)} by ${s.workflow}, ${link(s.runUrl, `run ${s.runId}`)} — verified<br><span class="hash">repository id ${s.repositoryId} · ${s.ref} · <a href="${statementUrl}">signed statement</a></span></dd>`;
}
