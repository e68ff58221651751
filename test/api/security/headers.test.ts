import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { backends, call, createTestContext, type TestContext } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const BUILT = fileURLToPath(new URL('../../../dist/dashboard/', import.meta.url))

/** Every file the static plugin can answer, by the path a browser would ask for. */
function builtFiles(dir = BUILT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name)
    return entry.isDirectory() ? builtFiles(full) : [`/dashboard/${relative(BUILT, full)}`]
  })
}

/**
 * Every GET route the app has, as full paths with a sample value for each parameter and wildcard, read from
 * Fastify's own route tree (printRoutes draws a node a line, indented by its depth, each adding its part of
 * the path to its parent's).
 */
function getPaths(app: TestContext['app']): string[] {
  const tree = app.printRoutes({ commonPrefix: false, method: 'GET' })
  const stack: string[] = []
  const paths: string[] = []
  for (const line of tree.split('\n')) {
    const at = line.search(/[├└]── /)
    if (at < 0) continue
    const depth = at / 4
    const segment = line.slice(at + 4).replace(/ \(GET(, HEAD)?\)$/, '')
    stack.length = depth
    stack.push(segment)
    paths.push(
      stack
        .join('')
        // A wildcard's node is drawn without the slash before it.
        .replace(/\/?\*$/, '/some/deep/path')
        .replace(/:(\w+)/g, (_m, name: string) => (name === 'name' ? 'missing.js' : `sample-${name}`)),
    )
  }
  return paths
}

for (const backend of backends()) {
  describe(`security headers (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('every dashboard path and every built file carries the page policy, framing refused', async () => {
      const files = builtFiles()
      assert.ok(files.includes('/dashboard/index.html'), 'dist/dashboard is built')
      const paths = [...files, '/dashboard', '/dashboard/', '/dashboard/payments/some/deep/path']
      for (const path of paths) {
        const res = await ctx.app.inject({ method: 'GET', url: path })
        assert.equal(res.statusCode, 200, path)
        const csp = String(res.headers['content-security-policy'] ?? '')
        assert.match(csp, /frame-ancestors 'none'/, `${path} has a CSP that refuses framing`)
        assert.equal(res.headers['x-content-type-options'], 'nosniff', path)
        assert.equal(res.headers['referrer-policy'], 'same-origin', path)
      }
    })

    it('every route that answers HTML, found in the route table, refuses framing and says nosniff', async () => {
      const html: string[] = []
      for (const path of getPaths(ctx.app)) {
        const res = await ctx.app.inject({ method: 'GET', url: path })
        if (!String(res.headers['content-type'] ?? '').startsWith('text/html')) continue
        html.push(path)
        const csp = String(res.headers['content-security-policy'] ?? '')
        assert.match(csp, /frame-ancestors 'none'/, `${path} (${res.statusCode}) refuses framing: ${csp}`)
        assert.equal(res.headers['x-content-type-options'], 'nosniff', path)
        assert.ok(res.headers['referrer-policy'], `${path} has a referrer policy`)
      }
      // The table was read: the pages of every kind are among what answered HTML.
      for (const page of ['/docs', '/dashboard', '/dashboard/index.html', '/dashboard/some/deep/path'])
        assert.ok(html.includes(page), `${page} among ${html.join(', ')}`)
      assert.ok(
        html.some((path) => path.startsWith('/pay/')),
        `a hosted page among ${html.join(', ')}`,
      )
    })

    it('the webhook configuration, which carries the signing secret, is never cached', async () => {
      const merchant = await ctx.newMerchant()
      const got = await call(ctx, 'GET', '/integration/webhook', undefined, { as: { merchant } })
      assert.equal(got.statusCode, 200, got.body)
      ctx.secrets.push(got.json().secret)
      assert.equal(got.headers['cache-control'], 'no-store')
      const put = await call(
        ctx,
        'PUT',
        '/integration/webhook',
        { url: 'https://shop.example/hooks' },
        { as: { merchant } },
      )
      assert.equal(put.statusCode, 200, put.body)
      assert.equal(put.headers['cache-control'], 'no-store')
      const rotated = await call(ctx, 'POST', '/integration/webhook/secret/rotate', undefined, {
        as: { merchant },
      })
      assert.equal(rotated.statusCode, 200, rotated.body)
      ctx.secrets.push(rotated.json().secret)
      assert.equal(rotated.headers['cache-control'], 'no-store')
    })

    it('/docs and the API say nosniff and a referrer policy, and no HSTS outside production', async () => {
      for (const url of ['/docs', '/docs/', '/integration/openapi.json', '/health']) {
        const res = await ctx.app.inject({ method: 'GET', url })
        assert.ok(res.statusCode < 500, `${url}: ${res.statusCode}`)
        assert.equal(res.headers['x-content-type-options'], 'nosniff', url)
        assert.ok(res.headers['referrer-policy'], `${url} has a referrer policy`)
        assert.equal(res.headers['strict-transport-security'], undefined, url)
      }
    })

    it('with HSTS configured, pages, the API and /docs all send Strict-Transport-Security', async () => {
      const hsts = await createTestContext(backend, { hstsMaxAgeSeconds: 31_536_000 })
      try {
        const merchant = await hsts.newMerchant()
        const api = await call(hsts, 'GET', '/integration/balances', undefined, { as: { merchant } })
        const failed = await hsts.app.inject({ method: 'GET', url: '/integration/balances' })
        const pages = await Promise.all(
          ['/dashboard/', '/dashboard/index.html', '/docs'].map((url) =>
            hsts.app.inject({ method: 'GET', url }),
          ),
        )
        for (const res of [api, failed, ...pages])
          assert.equal(res.headers['strict-transport-security'], 'max-age=31536000', res.body.slice(0, 80))
      } finally {
        await hsts.close()
      }
    })
  })
}
