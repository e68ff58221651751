import { randomBytes } from 'node:crypto'
import { type Config, loadConfig } from '../../src/config.ts'
import { programEnv } from './program.ts'

export const TEST_MASTER_KEY = randomBytes(32).toString('hex')

/**
 * The environment of a real `serve` on a test's PostgreSQL database (postgresUrlOf): development, the suites'
 * master key, warnings only, on 127.0.0.1:`port` (a command that listens on nothing needs none); `extra` adds
 * to it. Nothing of the caller's leaks in.
 */
export const serviceEnv = (databaseUrl: string, port: number | null, extra: Record<string, string> = {}) =>
  workerEnv(databaseUrl, { HOST: '127.0.0.1', ...(port === null ? {} : { PORT: String(port) }), ...extra })

/** The environment of a program on `databaseUrl` that serves no API (`serve --role worker`, a CLI command). */
export const workerEnv = (databaseUrl: string, extra: Record<string, string> = {}) =>
  programEnv({
    APP_ENV: 'development',
    DATABASE_URL: databaseUrl,
    MASTER_KEY: TEST_MASTER_KEY,
    LOG_LEVEL: 'warn',
    ...extra,
  })

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({
      APP_ENV: 'development',
      MASTER_KEY: TEST_MASTER_KEY,
      PUBLIC_BASE_URL: 'http://gateway.test',
      LOG_LEVEL: 'info',
    }),
    // Suites fire requests far faster than a merchant would; the rate-limit suite sets its own limits.
    rateLimit: { perSecond: 1_000_000, burst: 1_000_000 },
    // Suites change rates straight in the database and expect the next request to see it.
    rateCacheMs: 0,
    ...overrides,
  }
}
