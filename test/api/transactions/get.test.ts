import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { v7 } from 'uuid'
import { backends, call, newTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

/** The one error envelope (docs/API.md, Errors), its request_id the response's X-Request-Id. */
function assertNotFound(res: LightMyRequestResponse, what = '') {
  assert.equal(res.statusCode, 404, `${what}: ${res.body}`)
  const { error } = res.json()
  assert.equal(error.code, 'not_found', what)
  assert.equal(typeof error.message, 'string')
  assert.equal(error.request_id, res.headers['x-request-id'])
  assert.equal(error.details, null)
  return error
}

for (const backend of backends()) {
  describe(`get transaction (${backend})`, () => {
    const ctx = suiteContext(backend)
    // biome-ignore lint/suspicious/noExplicitAny: response bodies
    let card: any
    // biome-ignore lint/suspicious/noExplicitAny: response bodies
    let p2p: any
    // biome-ignore lint/suspicious/noExplicitAny: response bodies
    let bank: any
    /** The create responses' bodies as sent, by uuid. */
    const sent = new Map<string, string>()

    before(async () => {
      const made = async (body: Record<string, unknown>) => {
        const res = await call(ctx, 'POST', '/integration/transactions', body)
        assert.equal(res.statusCode, 201, res.body)
        sent.set(res.json().uuid, res.body)
        return res.json()
      }
      card = await made(
        newTransaction({
          external_id: 'A.b_c:d-1',
          // Keys in an order jsonb does not keep (it puts shorter keys first).
          metadata: { order: 'A-1', a: 'x' },
          success_url: 'https://shop.example/ok',
        }),
      )
      p2p = await made(newTransaction({ payment_method: 'p2p_card', amount: 250000 }))
      bank = await made(newTransaction({ payment_method: 'bank_transfer', currency: 'USD', amount: 1999 }))
    })

    describe('by uuid', () => {
      it('answers 200 with the transaction exactly as created', async () => {
        for (const tx of [card, p2p, bank]) {
          const res = await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`)
          assert.equal(res.statusCode, 200, res.body)
          assert.match(String(res.headers['content-type']), /^application\/json/)
          assert.deepEqual(res.json(), tx)
          // Byte for byte: the create answered with the row as stored, metadata keys in the same order.
          assert.equal(res.body, sent.get(tx.uuid))
        }
      })

      it('answers 404 for an unknown uuid', async () => {
        assertNotFound(await call(ctx, 'GET', `/integration/transactions/${v7()}`), 'unknown v7')
        assertNotFound(
          await call(ctx, 'GET', '/integration/transactions/00000000-0000-0000-0000-000000000000'),
          'nil uuid',
        )
      })

      it('answers 404, not 422 or 500, for a malformed uuid', async () => {
        const malformed = [
          'not-a-uuid',
          '123',
          card.uuid.slice(0, -1),
          `${card.uuid}0`,
          card.uuid.replaceAll('-', ''),
          `{${card.uuid}}`,
          "1' OR '1'='1",
          'a'.repeat(65),
          'a'.repeat(200),
          '%00',
          'by-external-id',
        ]
        for (const id of malformed) {
          assertNotFound(await call(ctx, 'GET', `/integration/transactions/${encodeURIComponent(id)}`), id)
          assertNotFound(
            await call(ctx, 'GET', `/integration/transactions/${encodeURIComponent(id)}/h2h`),
            `${id}/h2h`,
          )
        }
      })

      it("answers 404 for another merchant's transaction and for the other mode", async () => {
        assertNotFound(
          await call(ctx, 'GET', `/integration/transactions/${card.uuid}`, undefined, {
            as: { merchant: ctx.other },
          }),
          'other merchant',
        )
        assertNotFound(
          await call(ctx, 'GET', `/integration/transactions/${card.uuid}`, undefined, {
            as: { mode: 'live' },
          }),
          'live key',
        )
        // The owner still sees it.
        assert.equal((await call(ctx, 'GET', `/integration/transactions/${card.uuid}`)).statusCode, 200)
      })
    })

    describe('by external_id', () => {
      it('answers 200 with the same transaction as by uuid', async () => {
        for (const tx of [card, p2p, bank]) {
          const res = await call(ctx, 'GET', `/integration/transactions/by-external-id/${tx.external_id}`)
          assert.equal(res.statusCode, 200, res.body)
          assert.deepEqual(res.json(), tx)
        }
        // Every character class external_id allows survives the path.
        assert.equal(card.external_id, 'A.b_c:d-1')
      })

      it('matches exactly: no prefix, no other case', async () => {
        assertNotFound(await call(ctx, 'GET', '/integration/transactions/by-external-id/A.b_c:d-'), 'prefix')
        assertNotFound(
          await call(ctx, 'GET', '/integration/transactions/by-external-id/A.b_c:d-12'),
          'longer',
        )
        assertNotFound(
          await call(ctx, 'GET', '/integration/transactions/by-external-id/a.b_c:d-1'),
          'other case',
        )
        assertNotFound(
          await call(ctx, 'GET', '/integration/transactions/by-external-id/A.b_c%3Ad-%25'),
          'escaped',
        )
      })

      it('answers 404 for an unknown or impossible external_id', async () => {
        for (const id of [
          'never-created',
          'x'.repeat(64),
          'x'.repeat(65),
          'x'.repeat(150),
          'has space',
          '%',
          "' OR 1=1 --",
          // U+0000 cannot even be sent to PostgreSQL: 404, not 500.
          '\u0000',
          'a\u0000b',
        ]) {
          assertNotFound(
            await call(ctx, 'GET', `/integration/transactions/by-external-id/${encodeURIComponent(id)}`),
            id,
          )
        }
      })

      it("answers 404 for another merchant's external_id and for the other mode", async () => {
        const url = `/integration/transactions/by-external-id/${card.external_id}`
        assertNotFound(
          await call(ctx, 'GET', url, undefined, { as: { merchant: ctx.other } }),
          'other merchant',
        )
        assertNotFound(await call(ctx, 'GET', url, undefined, { as: { mode: 'live' } }), 'live key')
      })

      it('finds each scope its own transaction when merchants share an external_id', async () => {
        const res = await call(
          ctx,
          'POST',
          '/integration/transactions',
          newTransaction({ external_id: card.external_id, amount: 777 }),
          {
            as: { merchant: ctx.other },
          },
        )
        assert.equal(res.statusCode, 201, res.body)
        const mine = await call(ctx, 'GET', `/integration/transactions/by-external-id/${card.external_id}`)
        assert.equal(mine.json().uuid, card.uuid)
        const theirs = await call(
          ctx,
          'GET',
          `/integration/transactions/by-external-id/${card.external_id}`,
          undefined,
          {
            as: { merchant: ctx.other },
          },
        )
        assert.equal(theirs.json().uuid, res.json().uuid)
        assert.equal(theirs.json().amount, 777)
      })
    })

    describe('h2h', () => {
      it('serves the requisites of p2p_card and bank_transfer transactions', async () => {
        for (const tx of [p2p, bank]) {
          const res = await call(ctx, 'GET', `/integration/transactions/${tx.uuid}/h2h`)
          assert.equal(res.statusCode, 200, res.body)
          assert.deepEqual(res.json(), {
            uuid: tx.uuid,
            status: 'pending',
            amount: tx.amount,
            gross_amount: tx.gross_amount,
            currency: tx.currency,
            payment_method: tx.payment_method,
            requisites: tx.requisites,
            expires_at: tx.expires_at,
          })
          assert.equal(tx.h2h_url, `http://gateway.test/integration/transactions/${tx.uuid}/h2h`)
        }
        assert.deepEqual(bank.requisites, { account_number: '40817810099910004312', bank_name: 'Test Bank' })
        assert.equal(p2p.requisites.holder_name, 'A. Smith')
      })

      it('answers 404 not_found for a card transaction, which has no requisites', async () => {
        const error = assertNotFound(
          await call(ctx, 'GET', `/integration/transactions/${card.uuid}/h2h`),
          'card h2h',
        )
        assert.match(error.message, /hosted page/)
        assert.equal(card.h2h_url, null)
        assert.equal(card.requisites, null)
      })

      it("answers 404 for an unknown uuid and for another merchant's transaction", async () => {
        assertNotFound(await call(ctx, 'GET', `/integration/transactions/${v7()}/h2h`), 'unknown')
        assertNotFound(
          await call(ctx, 'GET', `/integration/transactions/${p2p.uuid}/h2h`, undefined, {
            as: { merchant: ctx.other },
          }),
          'other merchant',
        )
        assertNotFound(
          await call(ctx, 'GET', `/integration/transactions/${p2p.uuid}/h2h`, undefined, {
            as: { mode: 'live' },
          }),
          'live key',
        )
      })
    })
  })
}
