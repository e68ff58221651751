/**
 * The floors of the house (docs/ARCHITECTURE.md): lib/ at the bottom, then db/ and chain/, then http/ and connectors/,
 * then modules/, then workers/ and the program (app.ts, main.ts, seed.ts). A floor imports only from the floors
 * below it; `npm run check` fails on any import that runs back up.
 */
const PROGRAM = '^src/(app|main|seed)[.]ts$'

/** A forbidden import, an error: from the files whose path matches `from` to the ones `to` names. */
const forbid = (name, comment, from, to) => ({ name, severity: 'error', comment, from: { path: from }, to })

/** A floor of src/ that may import from the floors `below` (a regex alternation of folders) and itself only. */
const knowsOnly = (name, comment, floor, below) =>
  forbid(name, comment, `^src/${floor}/`, { path: '^src/', pathNot: `^src/(${below})/` })

module.exports = {
  forbidden: [
    forbid(
      'no-circular',
      'An import cycle makes the floors meaningless and the load order fragile.',
      '^src/',
      { circular: true },
    ),
    knowsOnly(
      'lib-is-the-ground-floor',
      'lib/ holds small pure helpers: they depend on nothing else of ours.',
      'lib',
      'lib',
    ),
    knowsOnly(
      'db-looks-down',
      'db/ (the database, its tables and shared statements) knows lib/ only.',
      'db',
      'lib|db',
    ),
    forbid(
      'http-looks-down',
      'http/ is what every route shares; it must not know a module, a connector or the program.',
      '^src/http/',
      { path: ['^src/(modules|connectors|workers)/', PROGRAM] },
    ),
    knowsOnly(
      'chain-looks-down',
      'chain/ holds what an EVM connector needs of a chain (addresses, deposit keys, token units); it knows lib/ only.',
      'chain',
      'lib|chain',
    ),
    knowsOnly(
      'connectors-look-down',
      'A connector speaks to a provider; it knows its own types, chain/ and lib/ only.',
      'connectors',
      'lib|chain|connectors',
    ),
    forbid(
      'modules-do-not-know-the-program',
      'modules/ are assembled by app.ts and driven by workers/, never the other way round.',
      '^src/modules/',
      { path: ['^src/workers/', PROGRAM] },
    ),
    forbid(
      'another-module-through-its-service',
      "A module reaches another module through its service, never its repository (the SQL is the owner's).",
      '^src/modules/([^/]+)/',
      { path: '^src/modules/[^/]+/repository([.]ts$|/)', pathNot: '^src/modules/$1/' },
    ),
    forbid(
      'another-modules-routes-are-its-own',
      "A module's routes.ts is its HTTP face, registered by app.ts: another module never imports it. What routes share (auth, the dashboard's session guard, errors) is in http/.",
      '^src/modules/([^/]+)/',
      { path: '^src/modules/[^/]+/routes[.]ts$', pathNot: '^src/modules/$1/' },
    ),
    forbid(
      'program-through-services',
      'Workers and the program call services, not repositories.',
      ['^src/workers/', PROGRAM],
      { path: '^src/modules/[^/]+/repository([.]ts$|/)' },
    ),
    forbid(
      'production-code-is-not-test-code',
      'Tests, benchmarks and scripts use production code, never the other way round.',
      '^src/',
      { path: '^(test|bench|scripts)/' },
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
}
