import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { Address, Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { minorToTokenUnits, tokenBalance } from '../../src/chain/token.ts'
import type { Mode } from '../../src/db/types.ts'
import { suiteEvm } from '../helpers/evm.ts'
import { addEvmAccount, addressOf, fundHotWallet, keyOf, transfersFrom } from '../helpers/evm-account.ts'
import {
  backends,
  call,
  eventsOf,
  eventually,
  paidTransaction,
  type TestMerchant,
} from '../helpers/harness.ts'
import { newPayout } from '../helpers/payouts.ts'
import { suiteContext } from '../helpers/suite.ts'

const MODE: Mode = 'test'
const CONFIRMATIONS = 3
const REPLACE_AFTER = 3

let keyCounter = 0
const idem = () => `evm-${Date.now()}-${keyCounter++}`
/** Far enough ahead that every open payout is due for its check. */
const later = () => new Date(Date.now() + 3_600_000)

// Payouts to ERC-20 wallets paid by an `evm-erc20` account from its hot wallet, on a local Hardhat node with
// TestUSDT (docs/CONNECTORS.md, The evm-erc20 kind).
for (const backend of backends()) {
  describe(`ERC-20 payouts from a hot wallet (${backend})`, () => {
    /** What the payouts told the operator. */
    const warnings: { fields: Record<string, unknown>; message: string }[] = []
    const ctx = suiteContext(backend, {
      // A payout's check holds it for 1 ms: the suite checks again at once, as often as it likes.
      services: {
        payouts: { timing: { leaseMs: 1 } },
        log: {
          warn: (fields: object, message?: string) =>
            warnings.push({ fields: fields as Record<string, unknown>, message: message ?? '' }),
        },
      },
    })
    const evm = suiteEvm()
    const hotKey = keyOf(`hot wallet ${backend}`)
    const hot = privateKeyToAccount(hotKey).address
    let accountUuid = ''

    before(async () => {
      await fundHotWallet(evm, hot, 10_000_000_000n)
      accountUuid = await addEvmAccount(ctx, evm, {
        name: 'usdt-chain',
        mode: MODE,
        key: hotKey,
        confirmations: CONFIRMATIONS,
        replaceAfterBlocks: REPLACE_AFTER,
      })
    })

    const funded = async (name: string) => {
      const merchant = await ctx.newMerchant(name)
      const paid = await paidTransaction(
        ctx,
        { amount: 500000, currency: 'USD', payment_method: 'card' },
        { merchant, mode: MODE },
      )
      assert.equal(paid.status, 'paid')
      return merchant
    }
    const payout = (merchant: TestMerchant, to: Address, amount = 10000) =>
      call(
        ctx,
        'POST',
        '/integration/payouts',
        newPayout({ amount, destination: { network: 'ERC20', address: to } }),
        { as: { merchant, mode: MODE }, auth: 'signature', idempotencyKey: idem() },
      )
    const payoutRow = (uuid: string) =>
      ctx.db.selectFrom('payouts').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow()
    const signed = (payoutUuid: string) =>
      ctx.db
        .selectFrom('chain_transactions')
        .selectAll()
        .where('payout_uuid', '=', payoutUuid)
        .orderBy('created_at')
        .execute()
    type SignedRow = Awaited<ReturnType<typeof signed>>[number]
    const available = async (merchant: TestMerchant) => {
      const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant, mode: MODE } })
      return res.json().data.find((b: { currency: string }) => b.currency === 'USDT').available as number
    }
    /** The token's Transfer events to `to`, from the hot wallet (or `from`), over the whole chain. */
    const transfersTo = (to: Address, from: Address = hot) => transfersFrom(evm, from, to)
    /** Mines `blocks` and runs the payouts' due checks until the payout is `status`. */
    const checkedUntil = async (uuid: string, status: string, blocks = CONFIRMATIONS) => {
      await evm.node.test.mine({ blocks })
      await eventually(async () => {
        await ctx.services.payouts.checkDue(100, later())
        return (await payoutRow(uuid)).status === status
      })
    }
    const connector = async () => (await ctx.services.providers.accounts.connector(accountUuid)).connector
    /**
     * A payout made to `to` while the node mines only when told, and its first transaction as kept; `work` runs on it
     * before the node mines each transaction again.
     */
    const signedUnmined = async (
      merchant: TestMerchant,
      to: Address,
      work: (uuid: string, tx: SignedRow) => Promise<void>,
    ) => {
      await evm.node.test.setAutomine(false)
      try {
        const res = await payout(merchant, to)
        assert.equal(res.statusCode, 201, res.body)
        const { uuid } = res.json()
        const [tx] = await signed(uuid)
        assert.ok(tx)
        await work(uuid, tx)
        return uuid as string
      } finally {
        await evm.node.test.setAutomine(true)
      }
    }

    it('pays a payout once, to the exact amount, and completes it after the confirmations', async () => {
      const merchant = await funded('Chain payouts')
      const to = addressOf('recipient one')
      const res = await payout(merchant, to)
      assert.equal(res.statusCode, 201, res.body)
      const { uuid } = res.json()
      const [tx, ...others] = await signed(uuid)
      assert.ok(tx)
      assert.equal(others.length, 0)
      const row = await payoutRow(uuid)
      assert.equal(row.status, 'processing')
      assert.equal(row.account_uuid, accountUuid)
      assert.equal(row.provider_reference, tx.hash)
      // Mined at once (the node mines each transaction), but not yet confirmed enough.
      await ctx.services.payouts.checkDue(100, later())
      assert.equal((await payoutRow(uuid)).status, 'processing')
      await checkedUntil(uuid, 'completed')
      const paid = minorToTokenUnits(row.amount_usdt_micro, 6)
      assert.equal(await tokenBalance(evm.node.public, evm.usdt.address, to), paid)
      const transfers = await transfersTo(to)
      assert.deepEqual(
        transfers.map((t) => [t.transactionHash, t.args.value]),
        [[tx.hash, paid]],
      )
      // The API, and the events the merchant's webhooks carry, name the transaction that paid it.
      const shown = await call(ctx, 'GET', `/integration/payouts/${uuid}`, undefined, {
        as: { merchant, mode: MODE },
      })
      assert.equal(shown.json().wallet.transaction_hash, tx.hash)
      assert.deepEqual(
        (await eventsOf(ctx, uuid)).map((e) => [e.event, e.body.payout.wallet.transaction_hash]),
        [
          ['payout.processing', tx.hash],
          ['payout.completed', tx.hash],
        ],
      )
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('broadcasts the same signed transaction when handed the payout again, never a second one', async () => {
      const merchant = await funded('Chain repeats')
      const to = addressOf('recipient two')
      const uuid = await signedUnmined(merchant, to, async (uuid, tx) => {
        // As if the process died after keeping the transaction and before the node had it.
        await evm.node.test.dropTransaction({ hash: tx.hash as Hex })
        const row = await payoutRow(uuid)
        const order = {
          payoutUuid: uuid,
          method: 'usdt_wallet' as const,
          amount: row.amount,
          currency: row.currency,
          amountUsdtMicro: row.amount_usdt_micro,
          destination: { network: 'ERC20', address: to },
        }
        const [again, once_more] = await Promise.all([
          (await connector()).submitPayout(order),
          (await connector()).submitPayout(order),
        ])
        assert.deepEqual(again, {
          kind: 'accepted',
          reference: tx.hash,
          status: 'processing',
          transactionHash: tx.hash,
        })
        assert.deepEqual(once_more, again)
        assert.equal((await signed(uuid)).length, 1)
        await evm.node.test.mine({ blocks: 1 })
      })
      await checkedUntil(uuid, 'completed')
      assert.equal((await transfersTo(to)).length, 1)
    })

    it('replaces a transaction the chain leaves unmined, and counts the one that is mined', async () => {
      const merchant = await funded('Chain replacements')
      const to = addressOf('recipient three')
      const uuid = await signedUnmined(merchant, to, async (uuid, first) => {
        // The base fee rises past what the first offered: it stays in the pool, unmined.
        const base = BigInt(first.max_fee_per_gas) + 1_000_000_000n
        for (let block = 0; block < REPLACE_AFTER; block++) {
          await evm.node.test.setNextBlockBaseFeePerGas({ baseFeePerGas: base })
          await evm.node.test.mine({ blocks: 1 })
        }
        assert.equal(
          await evm.node.public.getTransactionReceipt({ hash: first.hash as Hex }).catch(() => null),
          null,
        )
        await evm.node.test.setNextBlockBaseFeePerGas({ baseFeePerGas: base })
        await ctx.services.payouts.checkDue(100, later())
        const kept = await signed(uuid)
        assert.equal(kept.length, 2, 'a replacement is kept')
        const [, replacement] = kept as [(typeof kept)[0], (typeof kept)[0]]
        assert.equal(replacement.nonce, first.nonce)
        assert.equal(replacement.replaces_uuid, first.uuid)
        assert.ok(BigInt(replacement.max_fee_per_gas) >= (BigInt(first.max_fee_per_gas) * 110n) / 100n)
        await evm.node.test.mine({ blocks: 1 })
      })
      await checkedUntil(uuid, 'completed')
      const transfers = await transfersTo(to)
      assert.equal(transfers.length, 1)
      const kept = await signed(uuid)
      assert.equal(transfers[0]?.transactionHash, kept[1]?.hash)
      // The payout names the one mined, no longer the first.
      assert.equal((await payoutRow(uuid)).transaction_hash, kept[1]?.hash)
    })

    it('fails a payout whose transfer reverts, and returns its reserve', async () => {
      const merchant = await funded('Chain reverts')
      const before = await available(merchant)
      const to = addressOf('recipient four')
      const { node, usdt } = evm
      const refuse = async (refuse: boolean) =>
        node.public.waitForTransactionReceipt({
          hash: await node.wallet.writeContract({
            address: usdt.address,
            abi: usdt.abi,
            functionName: 'setRefuseTransfers',
            args: [refuse],
          }),
        })
      await refuse(true)
      let uuid = ''
      try {
        const res = await payout(merchant, to)
        assert.equal(res.statusCode, 201, res.body)
        uuid = res.json().uuid
        assert.ok((await available(merchant)) < before)
      } finally {
        await refuse(false)
      }
      await checkedUntil(uuid, 'failed')
      assert.equal(await available(merchant), before)
      assert.equal((await transfersTo(to)).length, 0)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('broadcasts again a payout whose block a reorganisation dropped, and pays it once', async () => {
      const merchant = await funded('Chain reorgs')
      const to = addressOf('recipient reorg')
      const before = await evm.node.test.snapshot()
      const res = await payout(merchant, to)
      assert.equal(res.statusCode, 201, res.body)
      const { uuid } = res.json()
      const [tx] = await signed(uuid)
      assert.ok(tx)
      const mined = await evm.node.public.getTransactionReceipt({ hash: tx.hash as Hex })
      assert.equal(mined.status, 'success')
      await ctx.services.payouts.checkDue(100, later())
      assert.equal((await payoutRow(uuid)).status, 'processing', 'mined, not yet confirmed')
      // The block with the transfer is reorganised away (and its transaction with it), before its confirmations.
      await evm.node.test.revert({ id: before })
      assert.equal(
        await evm.node.public.getTransactionReceipt({ hash: tx.hash as Hex }).catch(() => null),
        null,
      )
      assert.equal((await transfersTo(to)).length, 0)
      // The next check finds it mined nowhere and broadcasts the same bytes again.
      await ctx.services.payouts.checkDue(100, later())
      assert.equal((await evm.node.public.getTransactionReceipt({ hash: tx.hash as Hex })).status, 'success')
      await checkedUntil(uuid, 'completed')
      assert.deepEqual(
        (await transfersTo(to)).map((t) => t.transactionHash),
        [tx.hash],
      )
      assert.equal((await signed(uuid)).length, 1)
    })

    it('holds a payout while the hot wallet is short of tokens, and pays it once the wallet is funded', async () => {
      const merchant = await funded('Chain short')
      const poorKey = keyOf(`poor wallet ${backend}`)
      const poor = privateKeyToAccount(poorKey).address
      // Gas, but not a single token: this merchant's ERC20 payouts go to an account paying from it.
      await fundHotWallet(evm, poor, 0n)
      await addEvmAccount(ctx, evm, {
        name: 'usdt-poor',
        mode: MODE,
        key: poorKey,
        confirmations: 1,
        replaceAfterBlocks: REPLACE_AFTER,
        route: false,
      })
      await ctx.services.providers.routes.set(
        {
          merchantUuid: merchant.uuid,
          mode: MODE,
          subject: 'payout',
          method: 'usdt_wallet',
          network: 'ERC20',
        },
        ['usdt-poor'],
      )
      const to = addressOf('recipient short')
      const res = await payout(merchant, to)
      assert.equal(res.statusCode, 201, res.body)
      const { uuid } = res.json()
      assert.equal(res.json().status, 'pending')
      assert.deepEqual(await signed(uuid), [], 'nothing is signed')
      const told = warnings.find((w) => w.fields.payout === uuid)
      assert.ok(told, 'the operator is told')
      assert.equal(told.fields.account, 'usdt-poor')
      assert.match(String(told.fields.reason), new RegExp(`hot wallet ${poor} cannot cover`))
      // Handed over again at each check, and held while the wallet stays short.
      await ctx.services.payouts.checkDue(100, later())
      assert.equal((await payoutRow(uuid)).status, 'pending')
      assert.equal(warnings.filter((w) => w.fields.payout === uuid).length, 2)
      await fundHotWallet(evm, poor, 1_000_000_000n)
      await checkedUntil(uuid, 'completed', 1)
      assert.equal((await transfersTo(to, poor)).length, 1)
    })

    it('gives concurrent payouts from one hot wallet consecutive nonces, each paid once', async () => {
      const merchant = await funded('Chain nonces')
      const recipients = Array.from({ length: 6 }, (_, i) => addressOf(`recipient batch ${i}`))
      const start = (
        await ctx.db
          .selectFrom('chain_wallets')
          .select('next_nonce')
          .where('address', '=', hot)
          .executeTakeFirstOrThrow()
      ).next_nonce
      const made = await Promise.all(recipients.map((to) => payout(merchant, to, 1000)))
      for (const res of made) assert.equal(res.statusCode, 201, res.body)
      const nonces = (
        await ctx.db
          .selectFrom('chain_transactions')
          .select('nonce')
          .where(
            'payout_uuid',
            'in',
            made.map((res) => res.json().uuid as string),
          )
          .execute()
      )
        .map((row) => Number(row.nonce))
        .sort((a, b) => a - b)
      assert.deepEqual(
        nonces,
        recipients.map((_, i) => Number(start) + i),
      )
      // Broadcast in any order: a nonce that arrived before the one below it waits in the pool until that one is
      // in, as on any chain; blocks keep coming meanwhile.
      await evm.node.test.mine({ blocks: CONFIRMATIONS })
      await eventually(async () => {
        await ctx.services.payouts.checkDue(100, later())
        const rows = await Promise.all(made.map((res) => payoutRow(res.json().uuid)))
        if (rows.every((row) => row.status === 'completed')) return true
        await evm.node.test.mine({ blocks: 1 })
        return false
      }, 20_000)
      for (const to of recipients) assert.equal((await transfersTo(to)).length, 1)
      assert.equal(
        await evm.node.public.getTransactionCount({ address: hot }),
        Number(start) + recipients.length,
      )
    })
  })
}
