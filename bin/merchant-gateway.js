#!/usr/bin/env node
// The command-line program, compiled to dist/ by `npm run build` (which `npm install` runs). `listen` and
// `trigger` are the developer CLI of the SDK (sdk/, compiled to sdk/dist/): they talk to a service over HTTP.
const developer = ['listen', 'trigger'].includes(process.argv[2] ?? '')
const entry = developer ? '../sdk/dist/cli.js' : '../dist/main.js'
try {
  const module = await import(entry)
  if (developer) process.exitCode = await module.main(process.argv.slice(2))
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes(entry.slice(3))) throw err
  console.error('merchant-gateway is not built: run `npm run build` (or `npm install`) first.')
  process.exit(1)
}
