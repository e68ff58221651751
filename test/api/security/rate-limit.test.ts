import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../../src/app.ts'
import { backends, call, eventually, newTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const limits = { perSecond: 2, burst: 5 }

const header = (res: { headers: Record<string, unknown> }, name: string) => Number(res.headers[name])

for (const backend of backends()) {
  describe(`rate limits per API key (${backend})`, () => {
    const ctx = suiteContext(backend, { config: { rateLimit: limits } })

    it('a burst passes with RateLimit-* headers counting down, then 429 rate_limited with Retry-After', async () => {
      const shop = await ctx.newMerchant('Burst Shop')
      const seen: number[] = []
      for (let i = 0; i < limits.burst; i++) {
        const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant: shop } })
        assert.equal(res.statusCode, 200)
        assert.equal(header(res, 'ratelimit-limit'), limits.burst)
        assert.ok(header(res, 'ratelimit-reset') >= 1)
        seen.push(header(res, 'ratelimit-remaining'))
      }
      // Refill during the loop may give back at most a token or two; the count still goes down to the edge.
      assert.ok(seen[0] === limits.burst - 1 && seen.every((r, i) => i === 0 || r <= (seen[i - 1] as number)))
      let refused: Awaited<ReturnType<typeof call>> | undefined
      for (let i = 0; i < limits.burst + 2 && !refused; i++) {
        const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant: shop } })
        if (res.statusCode === 429) refused = res
      }
      assert.ok(refused, 'no 429 after the burst')
      const body = refused.json()
      assert.equal(body.error.code, 'rate_limited')
      assert.equal(typeof body.error.request_id, 'string')
      assert.ok(header(refused, 'retry-after') >= 1)
      assert.equal(header(refused, 'ratelimit-remaining'), 0)

      // Another key is not affected: buckets are per API key.
      const other = await call(ctx, 'GET', '/integration/balances', undefined, {
        as: { merchant: shop, mode: 'live' },
      })
      assert.equal(other.statusCode, 200)
      // The bucket refills at perSecond: the key works again.
      await eventually(
        async () =>
          (await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant: shop } }))
            .statusCode === 200,
        5000,
        100,
      )
    })

    it('a refused request never owns its Idempotency-Key, and failed authentication is 401, not 429', async () => {
      const shop = await ctx.newMerchant('Key Shop')
      const drain = async () => {
        for (let i = 0; i < limits.burst * 2; i++) {
          const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant: shop } })
          if (res.statusCode === 429) return
        }
        assert.fail('the bucket never ran dry')
      }
      await drain()
      const body = newTransaction()
      const refused = await call(ctx, 'POST', '/integration/transactions', body, {
        as: { merchant: shop },
        idempotencyKey: 'rl-key-1',
      })
      assert.equal(refused.statusCode, 429)
      const unauthenticated = await ctx.app.inject({ method: 'GET', url: '/integration/balances' })
      assert.equal(unauthenticated.statusCode, 401)
      assert.equal(unauthenticated.headers['ratelimit-limit'], undefined)
      const created = await eventually(async () => {
        const res = await call(ctx, 'POST', '/integration/transactions', body, {
          as: { merchant: shop },
          idempotencyKey: 'rl-key-1',
        })
        return res.statusCode === 429 ? null : res
      }, 5000)
      // The first request that got through owns the key: a fresh 201, not a replay of the 429.
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.headers['idempotent-replayed'], undefined)
    })

    it('with REDIS_URL, two API processes share one bucket per key', async () => {
      const config = { ...ctx.config, rateLimit: limits, redisUrl: REDIS_URL }
      const apps: FastifyInstance[] = []
      try {
        for (let i = 0; i < 2; i++) {
          const app = await buildApp({ db: ctx.db, config, services: ctx.services, logger: false })
          await app.ready()
          apps.push(app)
        }
        const shop = await ctx.newMerchant('Shared Shop')
        const headers = { 'x-api-key': shop.keys.test.secret }
        const statuses: number[] = []
        // Alternate between the two processes: together they get one burst, not two.
        for (let i = 0; i < limits.burst * 2; i++) {
          const app = apps[i % 2] as FastifyInstance
          statuses.push(
            (await app.inject({ method: 'GET', url: '/integration/balances', headers })).statusCode,
          )
        }
        const passed = statuses.filter((s) => s === 200).length
        assert.ok(passed >= limits.burst && passed < limits.burst * 2 - 1, `statuses ${statuses.join(',')}`)
        assert.ok(statuses.includes(429))
      } finally {
        for (const app of apps) await app.close()
      }
    })
  })
}
