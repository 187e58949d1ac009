// The import rules run by `npm test` (npm run -s deps). README's "Project layout" explains the layers.
// Layers, lowest first: a module may import its own layer and the ones below, never one above.
// A folder moved or renamed is a one-line change here.
const layers = [
  ['base', '^src/(bytes|concurrency|env)\\.ts$'],
  ['protocol', '^src/protocol/'],
  ['store', '^src/store/'],
  ['http', '^src/http/'],
  ['access', '^src/access/|^src/config\\.ts$'],
  ['services', '^src/(mirror|downloads|provenance)/'],
  ['handlers', '^src/(routes|pages)/'],
  ['index', '^src/index\\.ts$'],
  ['scripts', '^scripts/'],
  ['bench and test', '^(bench|test)/'],
];

const upward = layers.slice(0, -1).map(([name, path], i) => ({
  name: `layer-${name}`,
  comment: `${name} imports only its own layer and the ones below (${layers.slice(0, i).map(([n]) => n).join(', ') || 'none'})`,
  severity: 'error',
  // src/env.ts names the download counter's class for its binding's type: the one exception.
  from: { path, pathNot: '^src/env\\.ts$' },
  to: { path: layers.slice(i + 1).map(([, p]) => `(${p})`).join('|') },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'every-file-in-a-layer',
      comment: 'a new folder under src/ is given its place in the layers above (and in README) before anything imports from it',
      severity: 'error',
      from: { path: '^src/', pathNot: layers.map(([, p]) => `(${p})`).join('|') },
      to: {},
    },
    {
      name: 'no-sibling-handlers',
      comment: 'routes and pages do not import each other: what both need lives in a lower layer',
      severity: 'error',
      from: { path: '^src/(routes|pages)/' },
      to: { path: '^src/(routes|pages)/', pathNot: '^src/$1/' },
    },
    {
      name: 'no-sibling-services',
      comment: 'mirror, downloads and provenance do not import each other',
      severity: 'error',
      from: { path: '^src/(mirror|downloads|provenance)/' },
      to: { path: '^src/(mirror|downloads|provenance)/', pathNot: '^src/$1/' },
    },
    {
      name: 'no-circular',
      comment: 'no cycle, type-only imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|test/fixtures/.*/node_modules)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.mjs', '.js', '.json'] },
  },
};
