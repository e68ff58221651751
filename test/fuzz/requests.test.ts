import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { backends, createTestContext, type TestContext } from '../helpers/harness.ts'
import { COUNT, leftovers, ONLY, offlineSender, runRequests, show } from './runner.ts'
import { buildTargets, type FuzzContext } from './targets.ts'
import { SEED } from './values.ts'

/**
 * The fuzz pass: generated malformed and hostile requests against every route of the app, authenticated
 * (X-Api-Key, or X-Signature with an Idempotency-Key where money moves) most of the time so that they get past
 * authentication into validation and the handlers, and with broken credentials the rest of the time.
 *
 * Invariants, over every request: no status ≥ 500, no request left unanswered after 5 s, every error is the one
 * envelope (docs/API.md, Errors) with a code from the closed list and its own status, no stack trace, SQL text or file
 * content in a reply, no injected response header. After the run: the ledger still verifies, no Idempotency-Key
 * is left running, and no request refused by authentication or validation kept its key (docs/API.md, Idempotency).
 *
 * - FUZZ_SEED: the generator's seed (default in values.ts; any integer, decimal or 0x hex).
 * - FUZZ_COUNT: requests per backend (default 1500 for CI; the full pass is FUZZ_COUNT=10000).
 * - FUZZ_ONLY: comma-separated request indices to replay alone (each request draws from its own seeded stream,
 *   so request #i is the same whatever ran before it).
 * - FUZZ_DEBUG: print the unmutated requests that were refused anyway (to keep the generator honest).
 *
 * The pieces: targets.ts (every route, with a valid request), values.ts (the random draws and hostile values) and
 * json.ts (the bodies JSON.stringify cannot write), mutators.ts (what breaks a request), generators.ts (request #i
 * from its seed), judge.ts (what every reply must be), runner.ts (send them all, tally what came back).
 */
for (const backend of backends()) {
  describe(`fuzz: ${ONLY ? `requests ${ONLY.join(',')}` : `${COUNT} hostile requests`} on every route (${backend})`, () => {
    let ctx: TestContext
    let fc: FuzzContext
    before(async () => {
      ctx = await createTestContext(backend, {}, { sender: offlineSender })
      fc = await buildTargets(ctx)
    })
    after(() => ctx.close())

    it(`answers every request with a 4xx or 2xx in the one envelope, in time (seed ${SEED})`, async (t) => {
      const indices = ONLY ?? Array.from({ length: COUNT }, (_, i) => i)
      const run = await runRequests(fc, indices)
      // Refused requests left no key behind; nothing is left running.
      const { stored, running, ledger } = await leftovers(ctx, run.refusedKeys)

      t.diagnostic(
        `seed ${SEED}: ${indices.length} generated, ${run.sentCount} answered or hung, ${run.seconds.toFixed(1)} s (${(run.sentCount / run.seconds).toFixed(0)} req/s)`,
      )
      t.diagnostic(`status counts: ${show(run.statuses)}`)
      t.diagnostic(
        `hung: ${run.hung.length}; client-side (light-my-request) errors: ${[...run.clientErrors.values()].reduce((a, b) => a + b, 0)} ${show(run.clientErrors)}`,
      )
      t.diagnostic(`hosted-page HTML/plain 404s (not the JSON envelope, by design): ${run.hostedPage404}`)
      t.diagnostic(
        `single-mutation requests with a fixed expected status (400/413/415, or not 413): ${run.expectations}`,
      )
      t.diagnostic(
        `refused requests with their own Idempotency-Key: ${run.refusedKeys.length}, of which stored: ${stored.length}; keys left running: ${running.n}`,
      )
      t.diagnostic(`ledger: ok=${ledger.ok}, ${ledger.entries} entries`)
      t.diagnostic(`mutations: ${show(run.tags)}`)
      for (const [name, c] of [...run.perRoute.entries()].sort())
        t.diagnostic(`  ${name}: ${c.total} (${c.ok} accepted, ${c.refused} refused)`)

      const report = (label: string, list: string[]) =>
        `${list.length} ${label} (replay one with FUZZ_SEED=${SEED} FUZZ_ONLY=<#>):\n${list.slice(0, 25).join('\n')}`
      assert.equal(run.hung.length, 0, report('hung requests', run.hung))
      const kinds = [...run.problemKinds.entries()].map(([k, v]) => `${v.count}× ${k} (first #${v.first})`)
      for (const kind of kinds) t.diagnostic(`problem: ${kind}`)
      assert.equal(
        run.problems.length,
        0,
        `${report('bad replies', run.problems)}\nBy kind:\n${kinds.join('\n')}`,
      )
      assert.deepEqual(stored, [], 'a refused request kept its Idempotency-Key')
      assert.equal(Number(running.n), 0, 'an Idempotency-Key was left running')
      assert.ok(ledger.ok, `the ledger no longer verifies: ${JSON.stringify(ledger)}`)
      assert.equal(ctx.serverErrors.length, 0)
      if (!ONLY) {
        // The generator reaches every route, and on a full-size run gets requests accepted by each: a route whose
        // every request is refused would only ever fuzz its refusals.
        for (const target of fc.targets) {
          const seen = run.perRoute.get(target.name)
          assert.ok(seen && seen.total > 0, `no request reached ${target.name}`)
          if (COUNT >= 1000) assert.ok(seen.ok > 0, `no request to ${target.name} was accepted`)
        }
      }
    })
  })
}
