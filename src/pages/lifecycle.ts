import type { LifecycleMark } from '../store/lifecycle/state';
import { html, type Html } from './html';

/**
 * What the provider and module pages show of the lifecycle
 * (src/store/lifecycle/): notes above the page for a deprecated package, a
 * deprecated or withdrawn version, and badges in the version list. Messages
 * are the maintainer's text, escaped by `html` like everything stored.
 */

/** The notes for the page of `version` (empty when nothing is marked). */
export function lifecycleNotes(
  what: 'provider' | 'module',
  packageDeprecated: LifecycleMark | undefined,
  version: string,
  marks: { deprecated?: LifecycleMark; withdrawn?: LifecycleMark } | undefined,
): Html {
  return html`${packageDeprecated ? html`<p class="note" role="note" id="deprecated"><strong>This ${what} is deprecated</strong> (${day(packageDeprecated)}): ${packageDeprecated.message}</p>` : ''}${
    marks?.withdrawn
      ? html`<p class="note" role="note" id="withdrawn"><strong>Version ${version} was withdrawn</strong> (${day(marks.withdrawn)}): ${marks.withdrawn.message}<br>It is no longer offered to new installs: version constraints do not select it, and a lock file that pins it must be upgraded (<code>terraform init -upgrade</code>). Its files stay available for audits.</p>`
      : ''
  }${
    marks?.deprecated
      ? html`<p class="note" role="note" id="version-deprecated"><strong>Version ${version} is deprecated</strong> (${day(marks.deprecated)}): ${marks.deprecated.message}</p>`
      : ''
  }`;
}

/** Badges after a version in the version list. */
export function lifecycleBadges(marks: { deprecated?: LifecycleMark; withdrawn?: LifecycleMark } | undefined): Html {
  return html`${marks?.withdrawn ? html` <span class="badge pre">withdrawn</span>` : ''}${marks?.deprecated && !marks.withdrawn ? html` <span class="badge pre">deprecated</span>` : ''}`;
}

const day = (mark: LifecycleMark) => html`<time datetime="${mark.at}">${mark.at.slice(0, 10)}</time>`;
