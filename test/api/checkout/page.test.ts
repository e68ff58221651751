import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { Mode } from '../../../src/db/types.ts'
import { PAGE_CSP } from '../../../src/modules/checkout/routes.ts'
import { backends, call, newTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { providerCallbacks } from '../../helpers/rows.ts'
import { suiteContext } from '../../helpers/suite.ts'

/**
 * The hosted payment page over HTTP (docs/API.md: The hosted payment page, and payment_url in Transactions):
 * what the page and its status endpoint show, what they never show, their security headers, and the test-mode
 * buttons' path through the sandbox. The browser side (scripts running, redirects, accessibility) is
 * test/e2e/checkout.browser.test.ts.
 */

// biome-ignore lint/suspicious/noExplicitAny: responses are read as plain JSON.
type Json = Record<string, any>

const STATUS_KEYS = ['expires_at', 'final', 'message', 'redirect_url', 'status']
const MESSAGES = {
  pending: 'Waiting for your payment…',
  paid: 'Payment received. Thank you!',
  failed: 'The payment did not go through.',
  expired: 'This payment link has expired.',
} as const

const ASSET_DIR = new URL('../../../src/modules/checkout/assets/', import.meta.url)
const BASE_STYLESHEET = new URL('../../../src/http/assets/base.css', import.meta.url)

/** The headers every page, status and asset response carries. */
function assertSecurityHeaders(res: LightMyRequestResponse, cacheControl: string | RegExp = 'no-store') {
  const csp = res.headers['content-security-policy']
  assert.equal(csp, PAGE_CSP)
  assert.equal(res.headers['x-content-type-options'], 'nosniff')
  assert.equal(res.headers['referrer-policy'], 'no-referrer')
  assert.equal(res.headers['x-frame-options'], 'DENY')
  if (typeof cacheControl === 'string') assert.equal(res.headers['cache-control'], cacheControl)
  else assert.match(String(res.headers['cache-control']), cacheControl)
}

/** Scripts only from /pay/assets/, with no inline body; no inline style or handler: the CSP would block them. */
function assertNoInlineCode(html: string) {
  const opening = html.match(/<script\b/gi) ?? []
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)]
  assert.ok(scripts.length >= 1, 'the page loads its script')
  assert.equal(scripts.length, opening.length, 'every <script> is closed right after its src')
  for (const [, attributes, body] of scripts) {
    assert.equal(body, '', 'no inline script body')
    assert.match(attributes ?? '', /^\s+src="\/pay\/assets\/[\w.-]+\.js"(\s+defer)?\s*$/)
  }
  assert.doesNotMatch(html, /<style\b/i, 'no <style> element')
  const tags = html.match(/<[a-z][^>]*>/gi) ?? []
  assert.ok(tags.length > 10, 'the markup was read')
  for (const tag of tags) {
    assert.doesNotMatch(tag, /\sstyle\s*=/i, `no style attribute: ${tag}`)
    assert.doesNotMatch(tag, /\son[a-z]+\s*=/i, `no inline event handler: ${tag}`)
  }
  assert.doesNotMatch(html, /javascript:/i)
  for (const [, href] of html.matchAll(/<link\b[^>]*\shref="([^"]*)"/gi))
    assert.match(href ?? '', /^\/pay\/assets\/[\w.-]+\.css$/)
}

const amountShown = (html: string) => html.match(/<p class="amount"[^>]*>([^<]*)<\/p>/)?.[1]
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

for (const backend of backends()) {
  describe(`hosted payment page over HTTP (${backend})`, () => {
    const ctx = suiteContext(backend)

    const create = async (
      overrides: Record<string, unknown> = {},
      as: { merchant?: TestMerchant; mode?: Mode } = {},
    ): Promise<Json> => {
      const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(overrides), { as })
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }
    const tokenOf = (tx: Json): string => {
      const url = new URL(tx.payment_url)
      return url.pathname.split('/')[2] as string
    }
    const page = (token: string) => ctx.app.inject({ method: 'GET', url: `/pay/${token}` })
    const status = (token: string) => ctx.app.inject({ method: 'GET', url: `/pay/${token}/status` })
    const simulate = (token: string, outcome: 'paid' | 'failed', body?: string) =>
      ctx.app.inject({
        method: 'POST',
        url: `/pay/${token}/simulate/${outcome}`,
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, payload: body }),
      })
    const sandbox = async (tx: Json, simulation: string, merchant?: TestMerchant) => {
      const res = await call(
        ctx,
        'POST',
        `/integration/sandbox/transactions/${tx.uuid}/${simulation}`,
        undefined,
        {
          as: { merchant },
        },
      )
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }
    const fetchTx = async (tx: Json, as: { merchant?: TestMerchant; mode?: Mode } = {}) => {
      const res = await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`, undefined, { as })
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }
    const eventCount = async (uuid: string) =>
      (await ctx.db.selectFrom('events').select('uuid').where('aggregate_uuid', '=', uuid).execute()).length
    const callbacks = async (uuid: string) =>
      (await providerCallbacks(ctx.db, uuid)).map((c) => `${c.connector}:${c.result}`).sort()
    /** The status view: exactly its five keys, with the page's security headers. */
    const statusView = async (token: string) => {
      const res = await status(token)
      assert.equal(res.statusCode, 200, res.body)
      assert.match(String(res.headers['content-type']), /^application\/json/)
      assertSecurityHeaders(res)
      const view = res.json()
      assert.deepEqual(Object.keys(view).sort(), STATUS_KEYS)
      return view
    }
    const assertNotFoundJson = (res: LightMyRequestResponse, what: string) => {
      assert.equal(res.statusCode, 404, `${what}: ${res.body}`)
      const body = res.json()
      assert.deepEqual(Object.keys(body), ['error'])
      assert.equal(body.error.code, 'not_found', what)
      assert.equal(typeof body.error.message, 'string')
      assert.equal(body.error.request_id, res.headers['x-request-id'])
      // Errors of the page's endpoints carry its security headers too.
      assertSecurityHeaders(res)
    }

    describe('the page of a test-mode transaction', () => {
      it('payment_url is PUBLIC_BASE_URL/pay/<its own 128-bit token>, not the uuid', async () => {
        const tx = await create()
        const token = tokenOf(tx)
        assert.equal(tx.payment_url, `${ctx.config.publicBaseUrl}/pay/${token}`)
        assert.match(token, /^[A-Za-z0-9_-]{22}$/)
        assert.equal(Buffer.from(token, 'base64url').length, 16)
        assert.ok(!tx.payment_url.includes(tx.uuid))
        const second = await create()
        assert.notEqual(tokenOf(second), token)
      })

      it('200 HTML with the security headers, the merchant, amount, description and Simulate buttons', async () => {
        const tx = await create({ amount: 150000, currency: 'RUB', description: 'Two tickets, row 7' })
        const res = await page(tokenOf(tx))
        assert.equal(res.statusCode, 200, res.body)
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
        assertSecurityHeaders(res)
        const csp = String(res.headers['content-security-policy'])
        assert.match(csp, /(^|; )default-src 'none'(;|$)/)
        assert.match(csp, /(^|; )frame-ancestors 'none'(;|$)/)
        assert.ok(!csp.includes('unsafe-inline'), csp)
        assert.ok(!csp.includes('unsafe-eval'), csp)

        const html = res.body
        assert.ok(html.startsWith('<!doctype html>'))
        assert.ok(html.includes('<h1>Main Shop</h1>'), 'the merchant name')
        assert.equal(amountShown(html), '₽1,500.00')
        assert.ok(html.includes('<title>Pay Main Shop: ₽1,500.00</title>'))
        assert.ok(html.includes('<p class="description">Two tickets, row 7</p>'))
        assert.ok(html.includes(`>${MESSAGES.pending}</div>`), 'the live status starts as pending')
        assert.match(html, /<button type="button"[^>]*data-simulate="paid">Simulate payment<\/button>/)
        assert.match(html, /<button type="button"[^>]*data-simulate="failed">Simulate failure<\/button>/)
        assert.ok(html.includes(`datetime="${tx.expires_at}"`), 'the countdown runs to expires_at')
        assertNoInlineCode(html)
      })

      it('amounts are gross_amount formatted for the currency', async () => {
        const cases: [Record<string, unknown>, string][] = [
          [{ amount: 150000, currency: 'RUB' }, '₽1,500.00'],
          [{ amount: 1500, currency: 'JPY' }, '¥1,500'],
          [{ amount: 1234567, currency: 'KWD' }, 'KWD\u00a01,234.567'],
          [{ amount: 5, currency: 'USD' }, '$0.05'],
          [{ amount: 100000000000, currency: 'USD' }, '$1,000,000,000.00'],
        ]
        for (const [overrides, expected] of cases) {
          const tx = await create(overrides)
          const res = await page(tokenOf(tx))
          assert.equal(res.statusCode, 200, res.body)
          assert.equal(amountShown(res.body), expected, JSON.stringify(overrides))
        }
      })

      it('with a fee the customer pays, the page shows gross_amount, not amount', async () => {
        const shop = await ctx.newMerchant('Fee Shop')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 317, 0)
        const tx = await create(
          { amount: 123457, currency: 'USD', payment_method: 'card' },
          { merchant: shop },
        )
        // fee = round_half_up(123457 × 317 / 10000) = round_half_up(3913.5869) = 3914, all of it the customer's.
        assert.equal(tx.fee_amount, 3914)
        assert.equal(tx.merchant_fee_customer_amount, 3914)
        assert.equal(tx.gross_amount, 127371)
        const res = await page(tokenOf(tx))
        assert.equal(res.statusCode, 200, res.body)
        assert.equal(amountShown(res.body), '$1,273.71')
        assert.ok(res.body.includes('<h1>Fee Shop</h1>'))
        assert.ok(!res.body.includes('1,234.57'), 'the amount before the fee is not shown')
      })

      it('host-to-host requisites are shown with copy buttons and the exact amount', async () => {
        const tx = await create({ amount: 150000, currency: 'RUB', payment_method: 'p2p_card' })
        const res = await page(tokenOf(tx))
        assert.equal(res.statusCode, 200, res.body)
        for (const [label, value] of [
          ['Card number', '2200700112345678'],
          ['Bank', 'Test Bank'],
          ['Recipient', 'A. Smith'],
        ]) {
          assert.match(
            res.body,
            new RegExp(
              `<dt id="req-label-(\\d)">${label}</dt>\\s*<dd><span class="value" id="req-\\1">${escapeRegExp(value as string)}</span>\\s*<button type="button" class="copy" data-copy="req-\\1"`,
            ),
            label,
          )
        }
        assert.ok(res.body.includes('Send exactly <strong>₽1,500.00</strong>'))
        assertNoInlineCode(res.body)
      })

      it('a final payment has its buttons off and its countdown hidden', async () => {
        const tx = await create()
        await sandbox(tx, 'paid')
        const html = (await page(tokenOf(tx))).body
        assert.match(html, /data-simulate="paid" disabled>/)
        assert.match(html, /data-simulate="failed" disabled>/)
        assert.match(html, /<p class="countdown" hidden>/)
        assert.ok(html.includes(`>${MESSAGES.paid}</div>`))
        assert.ok(html.includes('data-status="paid"'))
        // The amount is no longer owed: the label says what it is now.
        assert.match(html, /<p class="amount-label" id="amount-label"[^>]*>Amount paid<\/p>/)
        const failed = await create()
        await sandbox(failed, 'failed')
        assert.match((await page(tokenOf(failed))).body, /id="amount-label"[^>]*>Amount not paid<\/p>/)
      })
    })

    describe('what the page never shows', () => {
      it('no ids, external_id, metadata, callback_url, keys, fees or other customers’ data', async () => {
        const shop = await ctx.newMerchant('Leak Shop')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 317, 4000)
        const other = await create(
          { description: 'Someone else’s order Kp3Wq', external_id: 'other-Yt6Re2' },
          { merchant: shop },
        )
        const tx = await create(
          {
            amount: 123457,
            currency: 'USD',
            payment_method: 'card',
            external_id: 'extid-Zq7Wv3Lp9',
            description: 'Leak check order',
            metadata: { order_ref: 'metaval-Hx4Kd8Rt', email: 'buyer-Jn2Pm6@example.test' },
            callback_url: 'https://hooks.example.test/cb-Vb5Ns1',
            success_url: 'https://shop.example.test/thanks',
            fail_url: 'https://shop.example.test/sorry',
          },
          { merchant: shop },
        )
        // fee 3914 (as above); the merchant's part round_half_up(3914 × 0.4) = 1566, the customer's 2348.
        assert.deepEqual(
          [
            tx.fee_amount,
            tx.merchant_fee_merchant_amount,
            tx.merchant_fee_customer_amount,
            tx.gross_amount,
            tx.net_amount,
          ],
          [3914, 1566, 2348, 125805, 121891],
        )
        const token = tokenOf(tx)

        const responses: [string, LightMyRequestResponse][] = []
        responses.push(['page pending', await page(token)])
        responses.push(['status pending', await status(token)])
        responses.push(['simulate paid', await simulate(token, 'paid')])
        responses.push(['page paid', await page(token)])
        responses.push(['status paid', await status(token)])
        assert.equal(amountShown(responses[0]?.[1].body ?? ''), '$1,258.05')
        assert.equal(responses[4]?.[1].json().redirect_url, 'https://shop.example.test/thanks')

        const never = [
          tx.uuid,
          other.uuid,
          shop.uuid,
          ctx.merchant.uuid,
          'extid-Zq7Wv3Lp9',
          'other-Yt6Re2',
          'metaval-Hx4Kd8Rt',
          'buyer-Jn2Pm6',
          'order_ref',
          'hooks.example.test',
          'cb-Vb5Ns1',
          'Kp3Wq',
          tokenOf(other),
          ...[shop, ctx.merchant, ctx.other].flatMap((m) =>
            (['test', 'live'] as const).flatMap((mode) => [m.keys[mode].key_id, m.keys[mode].secret]),
          ),
        ]
        // Figures are searched as whole numbers, once the token and the timestamp (random digits) are removed.
        const figures = [
          '3914',
          '39.14',
          '1566',
          '15.66',
          '2348',
          '23.48',
          '317',
          '3.17',
          '4000',
          '121891',
          '1,218.91',
          '1218.91',
          '1,234.57',
          '1234.57',
          '123457',
          String(tx.settlement_amount),
          tx.settlement_amount_formatted,
        ]
        for (const [what, res] of responses) {
          assert.ok(res.statusCode === 200, `${what}: ${res.statusCode} ${res.body}`)
          const headers = Object.entries(res.headers)
            .filter(([name]) => name !== 'x-request-id' && name !== 'date')
            .map(([name, value]) => `${name}: ${value}`)
            .join('\n')
          const text = `${headers}\n${res.body}`
          for (const value of never) assert.ok(!text.includes(value), `${what} shows ${value}`)
          const stripped = text.replaceAll(token, '<token>').replaceAll(tx.expires_at, '<expires_at>')
          for (const figure of figures)
            assert.doesNotMatch(stripped, new RegExp(`(?<![\\d.,])${escapeRegExp(figure)}(?![\\d])`), what)
          assert.doesNotMatch(stripped, /\bfee|USDT|settlement|fx_rate|metadata|external/i, what)
        }
      })
    })

    describe('escaping', () => {
      it('a merchant name, a description and a redirect URL with markup and quotes are escaped', async () => {
        const shop = await ctx.newMerchant('Plain')
        const name = `Evil "Shop" <script>alert(1)</script> O'Hara & Co`
        await ctx.services.merchants.updateMerchant(shop.uuid, { name })
        const description = `<script>alert(2)</script><img src=x onerror="alert(3)"> 'single' "double" & amp`
        const tx = await create(
          { amount: 150000, currency: 'RUB', description, success_url: "https://shop.test/ok?a=1&b='x'" },
          { merchant: shop },
        )
        assert.equal(tx.description, description)
        const nameHtml = 'Evil &quot;Shop&quot; &lt;script&gt;alert(1)&lt;/script&gt; O&#39;Hara &amp; Co'
        const descriptionHtml =
          '&lt;script&gt;alert(2)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(3)&quot;&gt; &#39;single&#39; &quot;double&quot; &amp; amp'

        await sandbox(tx, 'paid', shop)
        const res = await page(tokenOf(tx))
        assert.equal(res.statusCode, 200, res.body)
        const html = res.body
        assert.ok(html.includes(`<h1>${nameHtml}</h1>`), 'the name, escaped, in the heading')
        assert.ok(html.includes(`<title>Pay ${nameHtml}: ₽1,500.00</title>`), 'and in the title')
        assert.ok(html.includes(`<p class="description">${descriptionHtml}</p>`))
        assert.ok(html.includes(`data-redirect-url="https://shop.test/ok?a=1&amp;b=&#39;x&#39;"`))
        for (const raw of [
          name,
          description,
          '<script>alert',
          '<img',
          'onerror="',
          '"Shop"',
          `'single'`,
          "'x'",
        ])
          assert.ok(!html.includes(raw), `raw: ${raw}`)
        assertNoInlineCode(html)
        // The status endpoint is JSON: the URL is data there, as the merchant gave it.
        assert.equal((await statusView(tokenOf(tx))).redirect_url, "https://shop.test/ok?a=1&b='x'")
      })
    })

    describe('unknown and malformed tokens', () => {
      const badTokens = () => [
        ['unknown 22 characters', randomBytes(16).toString('base64url')],
        ['too short', 'abc'],
        ['21 characters', randomBytes(16).toString('base64url').slice(0, 21)],
        ['with %', `%25${'a'.repeat(21)}`],
        ['with markup', '%3Cscript%3Ealert(4)%3C%2Fscript%3E'],
        ['64 characters', 'a'.repeat(64)],
        ['65 characters', 'a'.repeat(65)],
        ['200 characters, the longest path segment the router takes', 'b'.repeat(200)],
      ]

      it('the page is the 404 "Payment not found" HTML with the same security headers', async () => {
        const tx = await create()
        for (const [what, token] of [
          ...badTokens(),
          ['the transaction uuid', tx.uuid],
          ['a real token with one more character', `${tokenOf(tx)}A`],
        ] as [string, string][]) {
          const res = await page(token)
          assert.equal(res.statusCode, 404, `${what}: ${res.body}`)
          assert.equal(res.headers['content-type'], 'text/html; charset=utf-8', what)
          assertSecurityHeaders(res)
          assert.ok(res.body.includes('<title>Payment not found</title>'), what)
          assert.ok(res.body.includes('<h1>Payment not found</h1>'), what)
          assert.ok(!res.body.includes('alert('), `${what}: the token is not reflected`)
          assert.ok(!res.body.includes('Main Shop'), what)
          assert.ok(!res.body.includes('data-simulate'), what)
          assertNoInlineCode(res.body)
        }
      })

      it('the status and simulate endpoints answer 404 not_found in the error envelope', async () => {
        const tx = await create()
        for (const [what, token] of [...badTokens(), ['the transaction uuid', tx.uuid]] as [
          string,
          string,
        ][]) {
          assertNotFoundJson(await status(token), `status, ${what}`)
          assertNotFoundJson(await simulate(token, 'paid'), `simulate paid, ${what}`)
          assertNotFoundJson(await simulate(token, 'failed', '{}'), `simulate failed, ${what}`)
        }
        assert.equal((await fetchTx(tx)).status, 'pending', 'the uuid as a token changed nothing')
        assert.equal(await eventCount(tx.uuid), 0)
      })

      it('a path segment beyond the router’s limit is refused with a 4xx that shows nothing of the page', async () => {
        for (const token of ['c'.repeat(201), 'd'.repeat(300)]) {
          for (const res of [await page(token), await status(token), await simulate(token, 'paid')]) {
            assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${res.statusCode} ${res.body}`)
            assert.ok(!res.body.includes(token))
            assert.ok(!res.body.includes('data-simulate'))
          }
        }
      })
    })

    describe('the status endpoint', () => {
      const urls = { success_url: 'https://shop.test/success', fail_url: 'https://shop.test/fail' }
      /** A payment with `overrides`, reported `outcome` through the sandbox: it and its status view. */
      const settledView = async (
        outcome: 'paid' | 'failed' | 'expired',
        overrides: Record<string, unknown>,
      ) => {
        const tx = await create(overrides)
        await sandbox(tx, outcome)
        return { tx, view: await statusView(tokenOf(tx)) }
      }
      /** With both URLs set, an `outcome` is final, says its message, and redirects to `redirect_url`. */
      const assertFinalView = async (outcome: 'paid' | 'failed' | 'expired', redirect_url: string) => {
        const { tx, view } = await settledView(outcome, urls)
        assert.deepEqual(view, {
          status: outcome,
          message: MESSAGES[outcome],
          final: true,
          expires_at: tx.expires_at,
          redirect_url,
        })
      }

      it('pending: not final, no redirect, the transaction’s expires_at', async () => {
        const tx = await create(urls)
        const view = await statusView(tokenOf(tx))
        assert.deepEqual(view, {
          status: 'pending',
          message: MESSAGES.pending,
          final: false,
          expires_at: tx.expires_at,
          redirect_url: null,
        })
      })

      it('paid: final, redirect to success_url, or null when none is set', async () => {
        await assertFinalView('paid', urls.success_url)
        for (const overrides of [{}, { fail_url: urls.fail_url }]) {
          const { view } = await settledView('paid', overrides)
          assert.equal(view.status, 'paid')
          assert.equal(view.final, true)
          assert.equal(view.redirect_url, null, 'never the fail_url for a payment made')
        }
      })

      it('failed: final, redirect to fail_url, or null when none is set', async () => {
        await assertFinalView('failed', urls.fail_url)
        const { view } = await settledView('failed', { success_url: urls.success_url })
        assert.equal(view.status, 'failed')
        assert.equal(view.redirect_url, null, 'never the success_url for a failed payment')
      })

      it('expired by the provider: final, fail_url', async () => {
        await assertFinalView('expired', urls.fail_url)
      })

      it('partially refunded and refunded stay "paid" to the customer', async () => {
        const shop = await ctx.newMerchant('Ticket Shop')
        // Money already available: refund debits are ceiled while settlements are floored (docs/API.md, Refunds).
        await sandbox(await create({ amount: 1_000_000 }, { merchant: shop }), 'paid', shop)
        const tx = await create({ amount: 150000, ...urls }, { merchant: shop })
        await sandbox(tx, 'paid', shop)
        const refund = async (amount: number) => {
          const res = await call(
            ctx,
            'POST',
            '/integration/refunds',
            { transaction_uuid: tx.uuid, amount_minor: amount },
            {
              as: { merchant: shop },
              auth: 'signature',
              idempotencyKey: `page-refund-${randomBytes(6).toString('hex')}`,
            },
          )
          assert.equal(res.statusCode, 201, res.body)
        }
        const paidView = {
          status: 'paid',
          message: MESSAGES.paid,
          final: true,
          expires_at: tx.expires_at,
          redirect_url: urls.success_url,
        }
        await refund(50000)
        assert.equal((await fetchTx(tx, { merchant: shop })).status, 'partially_refunded')
        assert.deepEqual(await statusView(tokenOf(tx)), paidView)
        await refund(100000)
        assert.equal((await fetchTx(tx, { merchant: shop })).status, 'refunded')
        assert.deepEqual(await statusView(tokenOf(tx)), paidView)
        const html = (await page(tokenOf(tx))).body
        assert.ok(html.includes('data-status="paid"'))
        assert.ok(!/refund/i.test(html), 'the page says nothing of refunds')
      })

      it('a pending transaction past expires_at is "expired" to the customer, before the job marks it', async () => {
        const tx = await create(urls)
        const past = new Date(Date.now() - 60_000)
        await ctx.db
          .updateTable('transactions')
          .set({ expires_at: past })
          .where('uuid', '=', tx.uuid)
          .execute()
        assert.deepEqual(await statusView(tokenOf(tx)), {
          status: 'expired',
          message: MESSAGES.expired,
          final: true,
          expires_at: past.toISOString(),
          redirect_url: urls.fail_url,
        })
        const html = (await page(tokenOf(tx))).body
        assert.ok(html.includes(`>${MESSAGES.expired}</div>`))
        assert.match(html, /data-simulate="paid" disabled>/)
        const stored = await fetchTx(tx)
        assert.equal(stored.status, 'pending', 'reading the status writes nothing')
        assert.equal(stored.aggregate_version, 1)
        assert.equal(await eventCount(tx.uuid), 0)
      })
    })

    describe('the test-mode buttons', () => {
      it('simulate/paid with a JSON body, an empty JSON body or none: paid through the sandbox path', async () => {
        for (const [what, body] of [
          ['{}', '{}'],
          ['empty JSON body', ''],
          ['no body', undefined],
        ] as const) {
          const tx = await create({ success_url: 'https://shop.test/success' })
          const res = await simulate(tokenOf(tx), 'paid', body)
          assert.equal(res.statusCode, 200, `${what}: ${res.body}`)
          assert.match(String(res.headers['content-type']), /^application\/json/)
          assertSecurityHeaders(res)
          assert.deepEqual(res.json(), {
            status: 'paid',
            message: MESSAGES.paid,
            final: true,
            expires_at: tx.expires_at,
            redirect_url: 'https://shop.test/success',
          })
          const stored = await fetchTx(tx)
          assert.equal(stored.status, 'paid', what)
          assert.equal(stored.aggregate_version, 2)
          assert.ok(stored.paid_at)
          const received = await providerCallbacks(ctx.db, tx.uuid)
          assert.deepEqual(
            received.map((c) => [c.connector, c.outcome, c.result, c.from_status, c.to_status]),
            [['simulator', 'paid', 'applied', 'pending', 'paid']],
          )
          assert.equal(await eventCount(tx.uuid), 1)
        }
      })

      it('a repeat is a duplicate with no second event; failed after paid is stale and changes nothing', async () => {
        const tx = await create()
        const token = tokenOf(tx)
        assert.equal((await simulate(token, 'paid', '{}')).json().status, 'paid')
        assert.equal(await eventCount(tx.uuid), 1)

        const again = await simulate(token, 'paid')
        assert.equal(again.statusCode, 200, again.body)
        assert.equal(again.json().status, 'paid')
        assert.deepEqual(await callbacks(tx.uuid), ['simulator:applied', 'simulator:duplicate'])
        assert.equal(await eventCount(tx.uuid), 1, 'no second event')

        const late = await simulate(token, 'failed')
        assert.equal(late.statusCode, 200, late.body)
        assert.equal(late.json().status, 'paid')
        assert.equal(late.json().final, true)
        assert.deepEqual(await callbacks(tx.uuid), [
          'simulator:applied',
          'simulator:duplicate',
          'simulator:stale',
        ])
        assert.equal(await eventCount(tx.uuid), 1)
        const stored = await fetchTx(tx)
        assert.equal(stored.status, 'paid')
        assert.equal(stored.aggregate_version, 2)
      })

      it('simulate/failed on a pending one fails it, with the fail_url', async () => {
        const tx = await create({ fail_url: 'https://shop.test/fail' })
        const res = await simulate(tokenOf(tx), 'failed', '{}')
        assert.equal(res.statusCode, 200, res.body)
        assert.deepEqual(res.json(), {
          status: 'failed',
          message: MESSAGES.failed,
          final: true,
          expires_at: tx.expires_at,
          redirect_url: 'https://shop.test/fail',
        })
        assert.equal((await fetchTx(tx)).status, 'failed')
        assert.deepEqual(await callbacks(tx.uuid), ['simulator:applied'])
        assert.equal(await eventCount(tx.uuid), 1)
      })

      it('a live-mode page has no buttons, and simulating answers 403 sandbox_unavailable and changes nothing', async () => {
        const tx = await create({ description: 'Live order' }, { mode: 'live' })
        assert.equal(tx.mode, 'live')
        const token = tokenOf(tx)
        const res = await page(token)
        assert.equal(res.statusCode, 200, res.body)
        assertSecurityHeaders(res)
        assert.ok(res.body.includes('<h1>Main Shop</h1>'))
        assert.equal(amountShown(res.body), '₽1,500.00')
        assert.ok(res.body.includes('<p class="description">Live order</p>'))
        assert.ok(!res.body.includes('data-simulate'))
        assert.ok(!res.body.includes('Simulate'))
        assert.ok(!/test mode/i.test(res.body))
        assertNoInlineCode(res.body)

        for (const outcome of ['paid', 'failed'] as const) {
          for (const body of ['{}', undefined]) {
            const refused = await simulate(token, outcome, body)
            assert.equal(refused.statusCode, 403, refused.body)
            const error = refused.json()
            assert.deepEqual(Object.keys(error), ['error'])
            assert.equal(error.error.code, 'sandbox_unavailable')
            assert.equal(typeof error.error.message, 'string')
            assert.equal(error.error.request_id, refused.headers['x-request-id'])
          }
        }
        const stored = await fetchTx(tx, { mode: 'live' })
        assert.equal(stored.status, 'pending')
        assert.equal(stored.aggregate_version, 1)
        assert.equal(await eventCount(tx.uuid), 0)
        assert.deepEqual(await callbacks(tx.uuid), [])
        assert.equal((await statusView(token)).status, 'pending')
      })
    })

    describe('assets', () => {
      const file = (url: URL) => readFileSync(url, 'utf8')
      for (const [name, type, body] of [
        ['checkout.js', 'text/javascript; charset=utf-8', file(new URL('checkout.js', ASSET_DIR))],
        // The reset the dashboard shares, then the page's own rules.
        [
          'checkout.css',
          'text/css; charset=utf-8',
          file(BASE_STYLESHEET) + file(new URL('checkout.css', ASSET_DIR)),
        ],
      ] as const) {
        it(`${name}: 200, its content-type, the security headers`, async () => {
          const res = await ctx.app.inject({ method: 'GET', url: `/pay/assets/${name}` })
          assert.equal(res.statusCode, 200, res.body)
          assert.equal(res.headers['content-type'], type)
          assertSecurityHeaders(res, /^public, max-age=\d+$/)
          assert.equal(res.body, body)
        })
      }

      it('anything else under /pay/assets/ is 404 with the security headers', async () => {
        for (const name of [
          'other.js',
          'checkout.JS',
          '..%2Fpage.ts',
          '..%2F..%2F..%2Fpackage.json',
          'checkout.js.map',
        ]) {
          const res = await ctx.app.inject({ method: 'GET', url: `/pay/assets/${name}` })
          assert.equal(res.statusCode, 404, `${name}: ${res.body}`)
          assertSecurityHeaders(res)
          assert.ok(!res.body.includes('import'), name)
        }
      })
    })

    it('the OpenAPI document does not list the /pay routes', async () => {
      const res = await call(ctx, 'GET', '/integration/openapi.json', undefined, { auth: 'none' })
      assert.equal(res.statusCode, 200, res.body)
      const paths = Object.keys(res.json().paths ?? {})
      assert.ok(paths.includes('/integration/transactions'), paths.join(', '))
      assert.deepEqual(
        paths.filter((p) => p.startsWith('/pay')),
        [],
      )
    })
  })
}
