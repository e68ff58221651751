import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { type Address, getAddress } from 'viem'
import { HDKey, privateKeyToAccount } from 'viem/accounts'
import { minorToTokenUnits, tokenBalance } from '../../src/chain/token.ts'
import type { Mode } from '../../src/db/types.ts'
import { assertError } from '../helpers/errors.ts'
import { suiteEvm } from '../helpers/evm.ts'
import { addEvmAccount, addressOf, fundHotWallet, keyOf } from '../helpers/evm-account.ts'
import { newTransaction } from '../helpers/factories.ts'
import { backends, call, eventsOf, eventually, type TestMerchant } from '../helpers/harness.ts'
import { newPayout } from '../helpers/payouts.ts'
import { suiteContext } from '../helpers/suite.ts'

const MODE: Mode = 'test'
const CONFIRMATIONS = 3

/** The deposit key's account (m/44'/60'/0'), from a seed of the suite: the gateway is given its xpub only. */
const DEPOSIT_XPUB = HDKey.fromMasterSeed(new Uint8Array(32).fill(7)).derive("m/44'/60'/0'").publicExtendedKey

// USDT deposits to addresses derived for each payment, followed on a local Hardhat node by the chain watcher
// (docs/CONNECTORS.md, Deposits).
for (const backend of backends()) {
  describe(`USDT deposits watched on the chain (${backend})`, () => {
    const warnings: string[] = []
    // A payout's check holds it for 1 ms: the suite checks again at once, as often as it likes.
    const ctx = suiteContext(backend, { services: { payouts: { timing: { leaseMs: 1 } } } })
    const evm = suiteEvm()
    let merchant: TestMerchant
    const errors: string[] = []
    const watcher = {
      leader: 'watcher one',
      log: {
        warn: (_: object, message?: string) => warnings.push(message ?? ''),
        error: (fields: object, message?: string) => errors.push(`${message}: ${JSON.stringify(fields)}`),
      },
    }
    /** Reads the chain up to its head (as `by`, when it leads) and counts what has its confirmations. */
    const watch = async (options = { range: 50, leaseMs: 60_000, traceDepth: 256 }, by = watcher) => {
      await ctx.services.transactions.watchChains(by, options)
      await ctx.services.transactions.countDeposits(by.log)
      // Every account was followed and counted: an error is logged, not thrown, so that it holds back no other.
      assert.deepEqual(errors.splice(0), [])
    }

    before(async () => {
      merchant = await ctx.newMerchant('Deposits')
      await addEvmAccount(ctx, evm, {
        name: `usdt-deposits-${backend}`,
        mode: MODE,
        key: keyOf(`deposit hot wallet ${backend}`),
        confirmations: CONFIRMATIONS,
        replaceAfterBlocks: 10,
        route: false,
        depositXpub: DEPOSIT_XPUB,
      })
      await ctx.services.providers.routes.set(
        { merchantUuid: null, mode: MODE, subject: 'payment', method: 'usdt_erc20' },
        [`usdt-deposits-${backend}`],
      )
    })

    /** A usdt_erc20 payment of `amount` micro-USDT: its API view. */
    const payment = async (amount: number) => {
      const res = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction({ amount, currency: 'USDT', payment_method: 'usdt_erc20' }),
        { as: { merchant, mode: MODE } },
      )
      assert.equal(res.statusCode, 201, res.body)
      return res.json() as {
        uuid: string
        status: string
        gross_amount: number
        requisites: Record<string, string>
      }
    }
    const shown = async (uuid: string) =>
      (
        await call(ctx, 'GET', `/integration/transactions/${uuid}`, undefined, {
          as: { merchant, mode: MODE },
        })
      ).json()
    /** The customer sends `units` of TestUSDT to `to`; answers the block it is in. */
    const send = async (to: string, units: bigint) => {
      const hash = await evm.node.wallet.writeContract({
        address: evm.usdt.address,
        abi: evm.usdt.abi,
        functionName: 'transfer',
        args: [to as Address, units],
      })
      return (await evm.node.public.waitForTransactionReceipt({ hash })).blockNumber
    }
    /**
     * Mines `blocks` one at a time, as a chain does: Hardhat's `hardhat_mine` of many blocks at once leaves them
     * with a parent hash of zero, which the watcher rightly takes for a reorganisation.
     */
    const mine = async (blocks: number) => {
      for (let i = 0; i < blocks; i++) await evm.node.test.request({ method: 'evm_mine' } as never)
    }
    const events = async (uuid: string) =>
      (await eventsOf(ctx, uuid)).map((e) => ({ event: e.event, transaction: e.body.transaction }))
    /** The customer sends `units` to `to`, and the watcher reads and counts it once it is deep enough. */
    const arrives = async (to: string, units: bigint) => {
      await send(to, units)
      await mine(CONFIRMATIONS)
      await watch()
    }
    /** Moves the payment's expiry into the past and runs the expiry job. */
    const expire = async (uuid: string) => {
      await ctx.db
        .updateTable('transactions')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('uuid', '=', uuid)
        .execute()
      await ctx.services.transactions.expireOverdue(100)
    }

    it('gives each payment its own derived address and the exact amount, and is paid after the confirmations', async () => {
      const first = await payment(12_340_000)
      const second = await payment(5_000_000)
      assert.equal(first.status, 'pending')
      const { requisites } = first
      assert.equal(requisites.network, 'ERC20')
      assert.equal(requisites.token_contract, getAddress(evm.usdt.address))
      assert.equal(requisites.chain_id, String(evm.node.chain.id))
      assert.match(requisites.address ?? '', /^0x[0-9a-fA-F]{40}$/)
      assert.notEqual(requisites.address, second.requisites.address)
      assert.equal(requisites.amount_units, String(first.gross_amount))
      assert.equal(Number(requisites.amount) * 1e6, first.gross_amount)
      const indexes = await ctx.db
        .selectFrom('chain_deposits')
        .select(['derivation_index', 'address'])
        .where('transaction_uuid', 'in', [first.uuid, second.uuid])
        .orderBy('derivation_index')
        .execute()
      assert.equal(indexes.length, 2)
      assert.notEqual(indexes[0]?.derivation_index, indexes[1]?.derivation_index)

      await send(requisites.address as string, BigInt(first.gross_amount))
      await watch()
      // Seen in one block: not yet deep enough.
      assert.equal((await shown(first.uuid)).status, 'pending')
      await mine(CONFIRMATIONS - 1)
      await watch()
      const paid = await shown(first.uuid)
      assert.equal(paid.status, 'paid')
      assert.equal(paid.amount_received, first.gross_amount)
      const said = await events(first.uuid)
      assert.deepEqual(
        said.map((e) => e.event),
        ['transaction.paid'],
      )
      assert.equal(said[0]?.transaction.amount_received, first.gross_amount)
      // Counted once: another round changes nothing.
      await mine(2)
      await watch()
      assert.equal((await shown(first.uuid)).amount_received, first.gross_amount)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('is paid by two parts, pending with the first part shown until the second comes', async () => {
      const p = await payment(8_000_000)
      const to = p.requisites.address as string
      await arrives(to, 3_000_000n)
      const half = await shown(p.uuid)
      assert.equal(half.status, 'pending')
      assert.equal(half.amount_received, 3_000_000)
      await arrives(to, BigInt(p.gross_amount) - 3_000_000n)
      const whole = await shown(p.uuid)
      assert.equal(whole.status, 'paid')
      assert.equal(whole.amount_received, p.gross_amount)
    })

    it('expires an under-payment at its expiry, with what it received recorded and shown', async () => {
      const p = await payment(9_000_000)
      await arrives(p.requisites.address as string, 4_500_000n)
      await expire(p.uuid)
      const expired = await shown(p.uuid)
      assert.equal(expired.status, 'expired')
      assert.equal(expired.amount_received, 4_500_000)
      const said = await events(p.uuid)
      assert.deepEqual(
        said.map((e) => [e.event, e.transaction.amount_received]),
        [['transaction.expired', 4_500_000]],
      )
    })

    it('pays an over-payment, with the excess recorded', async () => {
      const p = await payment(2_000_000)
      await arrives(p.requisites.address as string, BigInt(p.gross_amount) + 750_000n)
      const paid = await shown(p.uuid)
      assert.equal(paid.status, 'paid')
      assert.equal(paid.amount_received, p.gross_amount + 750_000)
    })

    it('pays late a payment whose money came after its expiry', async () => {
      const p = await payment(3_000_000)
      await expire(p.uuid)
      assert.equal((await shown(p.uuid)).status, 'expired')
      await arrives(p.requisites.address as string, BigInt(p.gross_amount))
      const paid = await shown(p.uuid)
      assert.equal(paid.status, 'paid')
      assert.deepEqual(
        (await events(p.uuid)).map((e) => e.event),
        ['transaction.expired', 'transaction.paid'],
      )
    })

    it('takes back a transfer whose block is reorganised away before its confirmations', async () => {
      const p = await payment(4_000_000)
      const snapshot = await evm.node.test.snapshot()
      await send(p.requisites.address as string, BigInt(p.gross_amount))
      await watch()
      const recorded = () =>
        ctx.db
          .selectFrom('chain_transfers')
          .select('transaction_hash')
          .where('payment_uuid', '=', p.uuid)
          .execute()
      assert.equal((await recorded()).length, 1)
      // The block with the transfer is gone; the chain that replaces it is longer and has no transfer.
      await evm.node.test.revert({ id: snapshot })
      await mine(CONFIRMATIONS + 2)
      warnings.length = 0
      await watch()
      assert.ok(
        warnings.some((w) => /reorganised/.test(w)),
        warnings.join('; '),
      )
      assert.equal((await recorded()).length, 0)
      await mine(CONFIRMATIONS)
      await watch()
      const still = await shown(p.uuid)
      assert.equal(still.status, 'pending')
      assert.equal(still.amount_received, undefined)
      // Sent again on the new chain, it counts once.
      await arrives(p.requisites.address as string, BigInt(p.gross_amount))
      const paid = await shown(p.uuid)
      assert.equal(paid.status, 'paid')
      assert.equal(paid.amount_received, p.gross_amount)
    })

    it('catches up after 200 blocks without it, with nothing missed or counted twice', async () => {
      const payments = await Promise.all([1, 2, 3, 4, 5].map((n) => payment(n * 1_000_000)))
      const sent = new Map<string, bigint>()
      // Spread over 200 blocks while no watcher runs: one payment in two parts, far apart.
      for (const [i, p] of payments.entries()) {
        const to = p.requisites.address as string
        const whole = BigInt(p.gross_amount)
        if (i === 0) {
          await send(to, whole / 2n)
          await mine(90)
          await send(to, whole - whole / 2n)
        } else await send(to, whole)
        sent.set(p.uuid, whole)
        await mine(30)
      }
      const head = await evm.node.public.getBlockNumber()
      const cursor = await ctx.db.selectFrom('chain_cursors').select('block_number').executeTakeFirstOrThrow()
      assert.ok(head - BigInt(cursor.block_number) >= 200n, `${head} - ${cursor.block_number}`)
      await watch()
      await watch()
      for (const p of payments) {
        const view = await shown(p.uuid)
        assert.equal(view.status, 'paid', p.uuid)
        assert.equal(view.amount_received, Number(sent.get(p.uuid)))
        assert.equal((await events(p.uuid)).filter((e) => e.event === 'transaction.paid').length, 1)
      }
      const transfers = await ctx.db
        .selectFrom('chain_transfers')
        .select(({ fn }) => fn.countAll<number>().as('n'))
        .where(
          'payment_uuid',
          'in',
          payments.map((p) => p.uuid),
        )
        .executeTakeFirstOrThrow()
      assert.equal(Number(transfers.n), payments.length + 1)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('lets one watcher lead an account at a time', async () => {
      await watch()
      const p = await payment(1_500_000)
      await send(p.requisites.address as string, BigInt(p.gross_amount))
      await mine(CONFIRMATIONS)
      const other = { ...watcher, leader: 'watcher two' }
      await watch(undefined, other)
      assert.equal((await shown(p.uuid)).status, 'pending')
      await watch()
      assert.equal((await shown(p.uuid)).status, 'paid')
    })

    it('never gives one address to two accounts given the same deposit key', async () => {
      const twin = `usdt-twin-${backend}`
      await addEvmAccount(ctx, evm, {
        name: twin,
        mode: MODE,
        key: keyOf(`twin hot wallet ${backend}`),
        confirmations: CONFIRMATIONS,
        replaceAfterBlocks: 10,
        route: false,
        depositXpub: DEPOSIT_XPUB,
      })
      const other = await ctx.newMerchant('Twin shop')
      await ctx.services.providers.routes.set(
        { merchantUuid: other.uuid, mode: MODE, subject: 'payment', method: 'usdt_erc20' },
        [twin],
      )
      const res = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction({ amount: 2_500_000, currency: 'USDT', payment_method: 'usdt_erc20' }),
        { as: { merchant: other, mode: MODE } },
      )
      assert.equal(res.statusCode, 201, res.body)
      const p = res.json()
      const given = await ctx.db
        .selectFrom('chain_deposits')
        .select(['address', 'transaction_uuid'])
        .execute()
      assert.equal(given.filter((d) => d.address === p.requisites.address).length, 1)
      // Paid, it is the twin's payment that is paid, once.
      await arrives(p.requisites.address, BigInt(p.gross_amount))
      const paid = (
        await call(ctx, 'GET', `/integration/transactions/${p.uuid}`, undefined, {
          as: { merchant: other, mode: MODE },
        })
      ).json()
      assert.equal(paid.status, 'paid')
      assert.equal(paid.amount_received, p.gross_amount)
      const transfers = await ctx.db
        .selectFrom('chain_transfers')
        .select('payment_uuid')
        .where(
          'transaction_hash',
          'in',
          ctx.db.selectFrom('chain_transfers').select('transaction_hash').where('payment_uuid', '=', p.uuid),
        )
        .execute()
      assert.deepEqual(transfers, [{ payment_uuid: p.uuid }])
    })

    it('refuses a usdt_erc20 payment in another currency, or where no account takes it', async () => {
      const rub = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction({ amount: 100_000, currency: 'RUB', payment_method: 'usdt_erc20' }),
        { as: { merchant, mode: MODE } },
      )
      assert.deepEqual(assertError(rub, 422, 'validation_failed').errors, {
        currency: ['usdt_erc20 payments are in USDT'],
      })
      const live = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction({ amount: 1_000_000, currency: 'USDT', payment_method: 'usdt_erc20' }),
        { as: { merchant, mode: 'live' } },
      )
      assert.equal(assertError(live, 422, 'unsupported_payment_method').details?.reason, 'no_route')
    })

    it('in live mode: a merchant paid in USDT on the chain pays it out on the chain, to the exact amount', async () => {
      const hotKey = keyOf(`live hot wallet ${backend}`)
      await fundHotWallet(evm, privateKeyToAccount(hotKey).address, 100_000_000n)
      await addEvmAccount(ctx, evm, {
        name: `usdt-live-${backend}`,
        mode: 'live',
        key: hotKey,
        confirmations: CONFIRMATIONS,
        replaceAfterBlocks: 10,
        depositXpub: HDKey.fromMasterSeed(new Uint8Array(32).fill(8)).derive("m/44'/60'/0'")
          .publicExtendedKey,
      })
      await ctx.services.providers.routes.set(
        { merchantUuid: null, mode: 'live', subject: 'payment', method: 'usdt_erc20' },
        [`usdt-live-${backend}`],
      )
      const shop = await ctx.newMerchant('Live chain shop')
      await ctx.db
        .updateTable('merchants')
        .set({ settlement_hold_seconds: 0 })
        .where('uuid', '=', shop.uuid)
        .execute()
      const live = { merchant: shop, mode: 'live' as const }
      const created = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction({ amount: 50_000_000, currency: 'USDT', payment_method: 'usdt_erc20' }),
        { as: live },
      )
      assert.equal(created.statusCode, 201, created.body)
      const p = created.json()
      await arrives(p.requisites.address, BigInt(p.gross_amount))
      const paid = await call(ctx, 'GET', `/integration/transactions/${p.uuid}`, undefined, { as: live })
      assert.equal(paid.json().status, 'paid')
      const balance = async () =>
        (await call(ctx, 'GET', '/integration/balances', undefined, { as: live }))
          .json()
          .data.find((b: { currency: string }) => b.currency === 'USDT')
      assert.equal((await balance()).available, p.settlement_amount)

      const to = addressOf(`live recipient ${backend}`)
      const res = await call(
        ctx,
        'POST',
        '/integration/payouts',
        newPayout({ amount: 2000, destination: { network: 'ERC20', address: to } }),
        { as: live, auth: 'signature', idempotencyKey: `live-${backend}-${p.uuid}` },
      )
      assert.equal(res.statusCode, 201, res.body)
      const payout = res.json()
      const row = await ctx.db
        .selectFrom('payouts')
        .select(['amount_usdt_micro', 'transaction_hash', 'mode'])
        .where('uuid', '=', payout.uuid)
        .executeTakeFirstOrThrow()
      assert.equal(row.mode, 'live')
      const later = new Date(Date.now() + 3_600_000)
      await eventually(async () => {
        await mine(1)
        await ctx.services.payouts.checkDue(100, later)
        const now = await call(ctx, 'GET', `/integration/payouts/${payout.uuid}`, undefined, { as: live })
        return now.json().status === 'completed' ? true : null
      })
      assert.equal(
        await tokenBalance(evm.node.public, evm.usdt.address, to),
        minorToTokenUnits(row.amount_usdt_micro, 6),
      )
      const said = await eventsOf(ctx, payout.uuid)
      assert.deepEqual(
        said.map((e) => [e.event, e.body.payout.wallet.transaction_hash]),
        [
          ['payout.processing', row.transaction_hash],
          ['payout.completed', row.transaction_hash],
        ],
      )
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('keeps an extended public key only, and refuses a private one or what is not one', async () => {
      const root = HDKey.fromMasterSeed(new Uint8Array(32).fill(9)).derive("m/44'/60'/0'")
      for (const xpub of [root.privateExtendedKey, 'xpub-not-a-key']) {
        await assert.rejects(
          addEvmAccount(ctx, evm, {
            name: `bad-deposit-key-${backend}-${xpub.length}`,
            mode: MODE,
            key: keyOf('bad deposit key'),
            confirmations: 1,
            replaceAfterBlocks: 1,
            route: false,
            depositXpub: xpub,
          }),
          (error: Error & { code?: string }) => error.code === 'validation_failed',
        )
      }
    })
  })
}
