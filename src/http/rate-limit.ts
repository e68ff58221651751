import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import { AppError, declareErrorResponses } from './errors.ts'

/** Rate limits (docs/API.md, Rate limits): a token bucket per API key, refilled at `perSecond` up to `burst`. */
export interface RateLimitConfig {
  perSecond: number
  burst: number
}

/** What the plugin expects of a store: `current` counts against `max`, `ttl` is the reset in milliseconds. */
interface StoreAnswer {
  current: number
  ttl: number
}
type Callback = (error: Error | null, answer?: StoreAnswer) => void

/**
 * The bucket's state after one request, in the plugin's terms. Allowed: `current` = burst − whole tokens left
 * (so RateLimit-Remaining is what is left) and `ttl` = time until the bucket is full again. Refused: `current`
 * exceeds the limit and `ttl` = time until the next token (Retry-After).
 */
function answer(allowed: boolean, tokens: number, { perSecond, burst }: RateLimitConfig): StoreAnswer {
  if (!allowed) return { current: burst + 1, ttl: Math.ceil(((1 - tokens) / perSecond) * 1000) }
  return { current: burst - Math.floor(tokens), ttl: Math.ceil(((burst - tokens) / perSecond) * 1000) }
}

/** One process's buckets, for a single API process (no REDIS_URL). */
function localStore(limits: RateLimitConfig) {
  const buckets = new LRUCache<string, { tokens: number; at: number }>({ max: 100_000 })
  return class LocalTokenBuckets {
    incr(key: string, callback: Callback) {
      const now = Date.now()
      const bucket = buckets.get(key) ?? { tokens: limits.burst, at: now }
      const tokens = Math.min(limits.burst, bucket.tokens + ((now - bucket.at) * limits.perSecond) / 1000)
      const allowed = tokens >= 1
      const left = allowed ? tokens - 1 : tokens
      buckets.set(key, { tokens: left, at: now })
      callback(null, answer(allowed, left, limits))
    }
    child() {
      return this
    }
  }
}

/** The same bucket in Redis, refilled and spent in one script on Redis's clock: shared by every API process. */
const TOKEN_BUCKET_LUA = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return { allowed, tostring(tokens) }
`

type RedisWithBucket = Redis & {
  tokenBucket(key: string, rate: number, burst: number): Promise<[number, string]>
}

function redisStore(limits: RateLimitConfig, redis: RedisWithBucket) {
  return class RedisTokenBuckets {
    incr(key: string, callback: Callback) {
      redis.tokenBucket(`mg:rl:${key}`, limits.perSecond, limits.burst).then(
        ([allowed, tokens]) => callback(null, answer(allowed === 1, Number(tokens), limits)),
        (error: Error) => callback(error),
      )
    }
    child() {
      return this
    }
  }
}

/**
 * Rate limits per API key (docs/API.md, Rate limits) on every authenticated operation: checked after authentication and
 * before validation, so a refused request never owns an Idempotency-Key. Every such response carries the
 * RateLimit-* headers; over the limit, 429 `rate_limited` with Retry-After. With a Redis URL the buckets are
 * shared by every API process; if Redis cannot be reached, requests pass rather than fail.
 */
export async function registerRateLimit(
  app: FastifyInstance,
  limits: RateLimitConfig,
  redisUrl: string | null,
): Promise<void> {
  // Every authenticated operation is limited, so every one can answer 429.
  app.addHook('onRoute', (route) => {
    if (route.config?.auth && route.config.auth !== 'none') declareErrorResponses(route.schema, 429)
  })
  let store: ReturnType<typeof localStore> | ReturnType<typeof redisStore>
  if (redisUrl) {
    const redis = new Redis(redisUrl, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
    }) as RedisWithBucket
    redis.defineCommand('tokenBucket', { numberOfKeys: 1, lua: TOKEN_BUCKET_LUA })
    redis.on('error', (err) => app.log.warn({ err }, 'rate limit store: Redis error'))
    // Connected before the first request; a Redis that is down at start is retried in the background.
    await redis.connect().catch((err) => app.log.error({ err }, 'rate limit store: Redis unreachable'))
    app.addHook('onClose', async () => {
      redis.disconnect()
    })
    store = redisStore(limits, redis)
  } else {
    store = localStore(limits)
  }
  await app.register(rateLimit, {
    global: true,
    hook: 'preValidation',
    max: limits.burst,
    timeWindow: 1000,
    enableDraftSpec: true,
    skipOnError: true,
    store,
    allowList: (request) => !request.auth,
    keyGenerator: (request) => request.auth?.keyId ?? request.ip,
    errorResponseBuilder: (_request, context) =>
      new AppError('rate_limited', `Too many requests for this API key: retry after ${context.after}.`, {
        limit_per_second: limits.perSecond,
        burst: limits.burst,
      }),
  })
}
