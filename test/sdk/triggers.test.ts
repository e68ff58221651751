import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { type Io, TRIGGERS, type Trigger, trigger } from '../../sdk/src/cli.ts'
import { MerchantGateway } from '../../sdk/src/index.ts'
import { backends, createTestContext, type TestContext } from '../helpers/harness.ts'

/**
 * `merchant-gateway trigger` on what a developer has on a fresh database: a merchant just made, with no balance,
 * and no market rate at all (only the demo seed sets any). Every trigger fires its event there; one that cannot
 * work says why before it creates anything.
 */

/** The event each trigger must fire, and the object it is about. */
const FIRES: Record<Trigger, string> = {
  'transaction.paid': 'transaction.paid',
  'transaction.failed': 'transaction.failed',
  'transaction.expired': 'transaction.expired',
  refund: 'transaction.refunded',
  'payout.completed': 'payout.completed',
}

const quiet = (): Io & { lines: string[] } => {
  const lines: string[] = []
  return { lines, out: (line) => lines.push(line), err: (line) => lines.push(line) }
}

for (const backend of backends()) {
  describe(`trigger on a fresh merchant with no market rates (${backend})`, () => {
    let ctx: TestContext
    let baseUrl: string
    before(async () => {
      ctx = await createTestContext(backend)
      // What a fresh database has: no rate for any currency.
      await ctx.db.deleteFrom('fx_rates').execute()
      baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    })
    after(() => ctx.close())

    const fresh = async (name: string, settlementCurrency?: string) => {
      const { merchant, keys } = await ctx.services.merchants.createMerchant({ name, settlementCurrency })
      ctx.secrets.push(keys.test.secret, keys.live.secret)
      const mg = new MerchantGateway({
        apiKey: keys.test.secret,
        keyId: keys.test.key_id,
        baseUrl,
        retryBaseMs: 10,
      })
      return { uuid: merchant.uuid, mg }
    }

    for (const name of Object.keys(TRIGGERS) as Trigger[])
      it(`${name} fires ${FIRES[name]}`, async () => {
        const { uuid, mg } = await fresh(`Fresh ${name}`)
        const io = quiet()
        await trigger(mg, name, io)
        assert.match(
          io.lines.at(-1) ?? '',
          new RegExp(`^Trigger succeeded! ${FIRES[name].replace('.', '\\.')}`),
        )
        const events = await mg.events.list({ per_page: 100 }).toArray()
        assert.ok(
          events.some((e) => e.event === FIRES[name]),
          `${FIRES[name]} among ${events.map((e) => e.event).join(', ')}`,
        )
        // No payment is left waiting: each one the trigger made reached an end.
        const open = await ctx.db
          .selectFrom('transactions')
          .select('uuid')
          .where('merchant_uuid', '=', uuid)
          .where('status', '=', 'pending')
          .execute()
        assert.deepEqual(open, [])
      })

    it('payout.completed for a merchant settling in RUB without USDT says why, and creates nothing', async () => {
      const { uuid, mg } = await fresh('Fresh RUB', 'RUB')
      await assert.rejects(trigger(mg, 'payout.completed', quiet()), /USDT balance.*Nothing was created/s)
      const made = await ctx.db
        .selectFrom('transactions')
        .select('uuid')
        .where('merchant_uuid', '=', uuid)
        .execute()
      const payouts = await ctx.db
        .selectFrom('payouts')
        .select('uuid')
        .where('merchant_uuid', '=', uuid)
        .execute()
      assert.deepEqual([made, payouts], [[], []])
    })
  })
}
