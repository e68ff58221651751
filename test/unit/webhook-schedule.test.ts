import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { STANDARD_RETRY_SCHEDULE } from '../../src/config.ts'
import { nextAttemptDelayMs } from '../../src/modules/webhooks/delivery.ts'
import { seededRandom } from '../helpers/random.ts'

const schedule = STANDARD_RETRY_SCHEDULE
const noRandom = () => {
  throw new Error('a Retry-After delay must not be jittered')
}

describe('nextAttemptDelayMs: the retry schedule', () => {
  it('is the Standard Webhooks schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h', () => {
    assert.deepEqual(schedule, [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400])
    const hours = schedule.reduce((sum, s) => sum + s, 0) / 3600
    assert.ok(hours > 75 && hours < 76, `${hours} h`)
  })

  it('without jitter (random 0.5) each failed attempt waits exactly its scheduled delay', () => {
    schedule.forEach((seconds, i) => {
      assert.equal(
        nextAttemptDelayMs(i + 1, null, schedule, () => 0.5),
        seconds * 1000,
      )
    })
  })

  it('10 attempts in all: after the 10th failure there is no next attempt', () => {
    let attempts = 1
    while (nextAttemptDelayMs(attempts, null, schedule, Math.random) !== null) attempts++
    assert.equal(attempts, 10)
    assert.equal(
      nextAttemptDelayMs(10, null, schedule, () => 0.5),
      null,
    )
    assert.equal(
      nextAttemptDelayMs(11, null, schedule, () => 0.5),
      null,
    )
    // A Retry-After does not extend the schedule either.
    assert.equal(nextAttemptDelayMs(10, 5, schedule, noRandom), null)
  })

  it('jitter stays within ±20 % and spreads over the whole band (seeded)', () => {
    const random = seededRandom(20261122)
    schedule.forEach((seconds, i) => {
      const attempt = i + 1
      const base = seconds * 1000
      const ratios: number[] = []
      for (let draw = 0; draw < 2000; draw++) {
        const delay = nextAttemptDelayMs(attempt, null, schedule, random)
        assert.ok(delay !== null, `attempt ${attempt} has a next one`)
        assert.ok(Number.isInteger(delay), `${delay} is whole milliseconds`)
        assert.ok(
          delay >= base * 0.8 && delay <= base * 1.2,
          `attempt ${attempt}: ${delay} ms for ${base} ms`,
        )
        ratios.push(delay / base)
      }
      // Not a constant factor: the draws reach both ends of the band.
      assert.ok(Math.min(...ratios) < 0.82, `smallest ${Math.min(...ratios)}`)
      assert.ok(Math.max(...ratios) > 1.18, `largest ${Math.max(...ratios)}`)
    })
  })

  it('the extremes of random() give exactly 80 % and nearly 120 %', () => {
    assert.equal(
      nextAttemptDelayMs(2, null, schedule, () => 0),
      240_000,
    )
    assert.equal(
      nextAttemptDelayMs(2, null, schedule, () => 0.999999999),
      360_000,
    )
  })
})

describe('nextAttemptDelayMs: Retry-After', () => {
  it('is honoured when it lies within [delay, 2 × delay]', () => {
    // Attempt 2 failed: the schedule says 300 s.
    assert.equal(nextAttemptDelayMs(2, 300, schedule, noRandom), 300_000)
    assert.equal(nextAttemptDelayMs(2, 450, schedule, noRandom), 450_000)
    assert.equal(nextAttemptDelayMs(2, 600, schedule, noRandom), 600_000)
  })

  it('shorter than the delay is raised to the delay', () => {
    assert.equal(nextAttemptDelayMs(2, 0, schedule, noRandom), 300_000)
    assert.equal(nextAttemptDelayMs(2, 1, schedule, noRandom), 300_000)
    assert.equal(nextAttemptDelayMs(1, 0, schedule, noRandom), 5000)
  })

  it('longer than twice the delay is cut to twice the delay', () => {
    assert.equal(nextAttemptDelayMs(2, 601, schedule, noRandom), 600_000)
    assert.equal(nextAttemptDelayMs(1, 86400, schedule, noRandom), 10_000)
    assert.equal(nextAttemptDelayMs(9, 10 ** 9, schedule, noRandom), 172_800_000)
  })

  it('applies to every attempt of the schedule', () => {
    schedule.forEach((base, i) => {
      assert.equal(
        nextAttemptDelayMs(i + 1, Math.round(base * 1.5), schedule, noRandom),
        Math.round(base * 1.5) * 1000,
      )
    })
  })

  it('follows a custom schedule the same way', () => {
    const short = [0.2, 1]
    assert.equal(nextAttemptDelayMs(1, 5, short, noRandom), 400)
    assert.equal(nextAttemptDelayMs(2, 1, short, noRandom), 1000)
    assert.equal(
      nextAttemptDelayMs(3, null, short, () => 0.5),
      null,
    )
  })
})
