import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { type AcquirerAnswer, AcquirerClient } from '../../src/connectors/http-acquirer/client.ts'
import { buildEmulator, parseFaults } from '../../src/emulator/server.ts'
import { eventually } from '../helpers/harness.ts'
import { START_DEADLINE_MS } from '../helpers/processes.ts'
import { freePort, programEnv, spawnProgram } from '../helpers/program.ts'

/** The body of an answer that must have succeeded. */
function body<T>(answer: AcquirerAnswer<T>): T {
  assert.ok(answer.ok, JSON.stringify(answer))
  return answer.body
}

// The gateway's acquirer client against the provider emulator, over real HTTP on a local port.
describe('acquirer client and provider emulator', () => {
  let emulator: FastifyInstance
  let base: string
  let client: AcquirerClient
  const decide = (kind: 'payments' | 'payouts', reference: string, status: string) =>
    fetch(`${base}/admin/${kind}/${reference}/decide`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status }),
    })

  before(async () => {
    emulator = buildEmulator({ apiKey: 'sk_emulator', publicUrl: 'http://emulator.test' })
    await emulator.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(emulator.server.address() as AddressInfo).port}`
    client = new AcquirerClient({ base_url: `${base}/v1`, timeout_ms: 2000 }, 'sk_emulator')
  })
  after(async () => {
    await client.close()
    await emulator.close()
  })

  const order = { amount: 150000, currency: 'RUB', return_url: 'https://gateway.test/pay/t' }

  it('hands a card payment over once per order id, and reads how it stands', async () => {
    const first = body(await client.createPayment({ ...order, order_id: 'ord-1', method: 'card' }))
    assert.equal(first.status, 'pending')
    assert.equal(first.redirect_url, `http://emulator.test/pay/${first.reference}`)
    // The same order again, as after a lost answer: the same payment, not a second one.
    const again = body(await client.createPayment({ ...order, order_id: 'ord-1', method: 'card' }))
    assert.equal(again.reference, first.reference)
    assert.equal(body(await client.payment(first.reference)).status, 'pending')
    // Its admin API lists the order's payments: one.
    const listed = await fetch(`${base}/admin/payments?order_id=ord-1`)
    assert.deepEqual(await listed.json(), [
      { reference: first.reference, order_id: 'ord-1', status: 'pending', amount: 150000, currency: 'RUB' },
    ])
    assert.equal((await decide('payments', first.reference, 'succeeded')).status, 200)
    assert.deepEqual(body(await client.payment(first.reference)), {
      reference: first.reference,
      order_id: 'ord-1',
      status: 'succeeded',
      amount: 150000,
      currency: 'RUB',
    })
  })

  it('answers requisites for a host-to-host method', async () => {
    const payment = body(await client.createPayment({ ...order, order_id: 'ord-h2h', method: 'p2p_card' }))
    assert.equal(payment.redirect_url, undefined)
    assert.ok(payment.requisites?.card_number)
  })

  it('refunds a paid payment once per refund id, and refuses more than was paid', async () => {
    const pending = body(await client.createPayment({ ...order, order_id: 'ord-2', method: 'card' }))
    const early = await client.refund(pending.reference, { refund_id: 'rf-0', amount: 100 })
    assert.ok(!early.ok && early.refused && early.code === 'declined', JSON.stringify(early))
    await decide('payments', pending.reference, 'succeeded')
    const refund = body(await client.refund(pending.reference, { refund_id: 'rf-1', amount: 100000 }))
    assert.equal(refund.status, 'succeeded')
    assert.equal(
      body(await client.refund(pending.reference, { refund_id: 'rf-1', amount: 100000 })).reference,
      refund.reference,
    )
    assert.equal(body(await client.refundStatus(refund.reference)).status, 'succeeded')
    const over = await client.refund(pending.reference, { refund_id: 'rf-2', amount: 50001 })
    assert.ok(!over.ok && over.refused && over.status === 422)
  })

  it('submits a payout once per payout id, and reads its end', async () => {
    const input = {
      payout_id: 'po-1',
      amount: 2500,
      currency: 'USD',
      method: 'card',
      destination: { card: '4111' },
    }
    const payout = body(await client.submitPayout(input))
    assert.equal(payout.status, 'processing')
    assert.equal(body(await client.submitPayout(input)).reference, payout.reference)
    await decide('payouts', payout.reference, 'completed')
    assert.equal(body(await client.payoutStatus(payout.reference)).status, 'completed')
  })

  it('tells a refusal (wrong key, unknown reference) from no usable answer', async () => {
    const stranger = new AcquirerClient({ base_url: `${base}/v1`, timeout_ms: 2000 }, 'sk_wrong')
    const refused = await stranger.payment('pay_x')
    await stranger.close()
    assert.ok(!refused.ok && refused.refused && refused.code === 'unauthorized')
    const unknown = await client.payment('pay_unknown')
    assert.ok(!unknown.ok && unknown.refused && unknown.status === 404)
  })

  describe('an acquirer that fails', () => {
    const servers: Server[] = []
    /** A local server answering every request with `handle` (never answering when it does nothing). */
    const serve = async (handle: Parameters<typeof createServer>[1]) => {
      const server = createServer(handle)
      servers.push(server)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    }
    after(() => {
      for (const server of servers) server.closeAllConnections()
      return Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
    })

    it('counts a 5xx, a time-out and a closed port as no usable answer, within the time-out', async () => {
      const failing = await serve((_req, res) => res.writeHead(503).end('{"error":{"code":"busy"}}'))
      const silent = await serve(() => {})
      const closed = await serve(() => {})
      servers.at(-1)?.close()
      for (const [url, reason] of [
        [failing, /answered 503/],
        [silent, /timed out/],
        [closed, /no answer/],
      ] as const) {
        const slow = new AcquirerClient({ base_url: url, timeout_ms: 300 }, 'k')
        const started = Date.now()
        const answer = await slow.createPayment({ ...order, order_id: 'ord-f', method: 'card' })
        await slow.close()
        assert.ok(!answer.ok && !answer.refused, JSON.stringify(answer))
        assert.match(answer.reason, reason)
        assert.ok(Date.now() - started < 2000, 'bounded by the time-out')
      }
    })
  })

  it('runs as its own program, printing the API key it made', async () => {
    const port = await freePort()
    const program = spawnProgram(['provider-emulator', '--port', String(port)], programEnv({}))
    try {
      // A start compiles the program with tsx first: seconds on a busy machine.
      const key = await eventually(
        async () => /API key: (sk_emulator_\w+)/.exec(program.output())?.[1] ?? null,
        START_DEADLINE_MS,
      )
      const own = new AcquirerClient({ base_url: `http://127.0.0.1:${port}/v1`, timeout_ms: 2000 }, key)
      const payment = body(await own.createPayment({ ...order, order_id: 'ord-program', method: 'card' }))
      assert.equal(payment.redirect_url, `http://127.0.0.1:${port}/pay/${payment.reference}`)
      await own.close()
    } finally {
      program.child.kill('SIGTERM')
      assert.equal(await program.exited, 0)
    }
  })

  describe('the emulator with faults', () => {
    const faulty = async (faults: Record<string, unknown>) => {
      const emulator = buildEmulator({
        apiKey: 'k',
        publicUrl: 'http://emulator.test',
        faults: parseFaults(faults),
      })
      await emulator.listen({ port: 0, host: '127.0.0.1' })
      const url = `http://127.0.0.1:${(emulator.server.address() as AddressInfo).port}`
      return { emulator, client: new AcquirerClient({ base_url: `${url}/v1`, timeout_ms: 300 }, 'k'), url }
    }

    it('answers 503, answers late, or never answers, as set', async () => {
      for (const [faults, reason] of [
        [{ error_rate: 1 }, /answered 503/],
        [{ timeout_rate: 1 }, /timed out/],
        [{ latency_ms: 1000 }, /timed out/],
      ] as const) {
        const { emulator, client } = await faulty(faults)
        const answer = await client.createPayment({ ...order, order_id: 'ord-fault', method: 'card' })
        assert.ok(!answer.ok && !answer.refused, JSON.stringify(answer))
        assert.match(answer.reason, reason)
        await client.close()
        await emulator.close()
      }
    })

    it('leaves refunds pending or fails them, and reports another amount than was asked', async () => {
      const { emulator, client, url } = await faulty({ refunds: 'pending', amount_delta: -100 })
      const payment = body(await client.createPayment({ ...order, order_id: 'ord-f2', method: 'card' }))
      await fetch(`${url}/admin/payments/${payment.reference}/decide`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'succeeded' }),
      })
      assert.equal(body(await client.payment(payment.reference)).amount, order.amount - 100)
      assert.equal(
        body(await client.refund(payment.reference, { refund_id: 'r-p', amount: 10 })).status,
        'pending',
      )
      const setFaults = (faults: Record<string, unknown>) =>
        fetch(`${url}/admin/faults`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(faults),
        })
      const changed = await setFaults({ refunds: 'fail' })
      assert.equal(((await changed.json()) as { amount_delta: number }).amount_delta, 0)
      assert.equal(
        body(await client.refund(payment.reference, { refund_id: 'r-f', amount: 10 })).status,
        'failed',
      )
      const refused = await setFaults({ error_rate: -1 })
      assert.equal(refused.status, 400)
      await client.close()
      await emulator.close()
    })

    it('refuses a fault it does not know', () => {
      assert.throws(() => parseFaults({ chaos: 'yes' }), /no fault named chaos/)
      assert.throws(() => parseFaults({ refunds: 'sometimes' }), /refunds is succeed, pending or fail/)
    })
  })
})
