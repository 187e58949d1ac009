import { asObject, asString, asStringArray, optional } from './shape';

/**
 * The provider network mirror protocol's wire shapes, with builders (the
 * Worker serves their output) and parsers (the tests' installer reads
 * responses with them).
 */

/** GET :hostname/:namespace/:type/index.json — "list available versions": an empty object per version. */
export interface MirrorIndexResponse {
  versions: Record<string, Record<string, never>>;
}

/** One platform's archive: its URL (relative to the document) and its hashes ("h1:…", "zh:…"). */
export interface MirrorArchive {
  url: string;
  hashes?: string[];
}

/** GET :hostname/:namespace/:type/:version.json — "list available installation packages", keyed "os_arch". */
export interface MirrorVersionResponse {
  archives: Record<string, MirrorArchive>;
}

/** The index.json body for versions already in the order to serve (ascending). */
export function mirrorIndexBody(versions: readonly string[]): string {
  return JSON.stringify({
    versions: Object.fromEntries(versions.map((version) => [version, {}])),
  } satisfies MirrorIndexResponse);
}

/** The VERSION.json body from [os_arch, archive] pairs in the order to serve. */
export function mirrorVersionBody(archives: readonly (readonly [string, Required<MirrorArchive>])[]): string {
  return JSON.stringify({
    archives: Object.fromEntries(archives.map(([platform, { url, hashes }]) => [platform, { url, hashes }])),
  } satisfies MirrorVersionResponse);
}

/** Parses index.json. Throws WireShapeError when `versions` is not an object of objects. */
export function parseMirrorIndexResponse(json: unknown): MirrorIndexResponse {
  const versions = asObject(asObject(json, 'index.json').versions, 'versions');
  for (const [version, value] of Object.entries(versions)) asObject(value, `versions.${version}`);
  return { versions: versions as MirrorIndexResponse['versions'] };
}

/** Parses VERSION.json. Throws WireShapeError naming the first archive without a string `url` or with bad `hashes`. */
export function parseMirrorVersionResponse(json: unknown): MirrorVersionResponse {
  const archives = asObject(asObject(json, 'VERSION.json').archives, 'archives');
  return {
    archives: Object.fromEntries(
      Object.entries(archives).map(([platform, value]) => {
        const where = `archives.${platform}`;
        const archive = asObject(value, where);
        return [
          platform,
          {
            url: asString(archive.url, `${where}.url`),
            hashes: optional(archive.hashes, `${where}.hashes`, asStringArray),
          },
        ];
      }),
    ),
  };
}
