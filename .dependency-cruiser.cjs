/**
 * The floors of the house (docs/ARCHITECTURE.md): lib/ at the bottom, then db/, then http/ and connectors/,
 * then modules/, then workers/ and the program (app.ts, main.ts, seed.ts). A floor imports only from the floors
 * below it; `npm run check` fails on any import that runs back up.
 */
const PROGRAM = '^src/(app|main|seed)[.]ts$'

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle makes the floors meaningless and the load order fragile.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'lib-is-the-ground-floor',
      severity: 'error',
      comment: 'lib/ holds small pure helpers: they depend on nothing else of ours.',
      from: { path: '^src/lib/' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'db-looks-down',
      severity: 'error',
      comment: 'db/ (the database, its tables and shared statements) knows lib/ only.',
      from: { path: '^src/db/' },
      to: { path: '^src/', pathNot: '^src/(lib|db)/' },
    },
    {
      name: 'http-looks-down',
      severity: 'error',
      comment: 'http/ is what every route shares; it must not know a module, a connector or the program.',
      from: { path: '^src/http/' },
      to: { path: ['^src/(modules|connectors|workers)/', PROGRAM] },
    },
    {
      name: 'connectors-look-down',
      severity: 'error',
      comment: 'A connector speaks to a provider; it knows its own types and lib/ only.',
      from: { path: '^src/connectors/' },
      to: { path: '^src/', pathNot: '^src/(lib|connectors)/' },
    },
    {
      name: 'modules-do-not-know-the-program',
      severity: 'error',
      comment: 'modules/ are assembled by app.ts and driven by workers/, never the other way round.',
      from: { path: '^src/modules/' },
      to: { path: ['^src/workers/', PROGRAM] },
    },
    {
      name: 'another-module-through-its-service',
      severity: 'error',
      comment:
        "A module reaches another module through its service, never its repository (the SQL is the owner's).",
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/repository([.]ts$|/)', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'another-modules-routes-are-its-own',
      severity: 'error',
      comment:
        "A module's routes.ts is its HTTP face, registered by app.ts: another module never imports it. What routes share (auth, the dashboard's session guard, errors) is in http/.",
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/routes[.]ts$', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'program-through-services',
      severity: 'error',
      comment: 'Workers and the program call services, not repositories.',
      from: { path: ['^src/workers/', PROGRAM] },
      to: { path: '^src/modules/[^/]+/repository([.]ts$|/)' },
    },
    {
      name: 'production-code-is-not-test-code',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
}
