#!/usr/bin/env node
// The command-line program, compiled to dist/ by `npm run build` (which `npm install` runs).
try {
  await import('../dist/main.js')
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist/main.js')) throw err
  console.error('merchant-gateway is not built: run `npm run build` (or `npm install`) first.')
  process.exit(1)
}
