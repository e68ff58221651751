import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import type { Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { minorToTokenUnits } from '../../src/chain/token.ts'
import type { Db } from '../../src/db/index.ts'
import type { Mode } from '../../src/db/types.ts'
import { suiteEvm } from '../helpers/evm.ts'
import { addEvmAccount, addressOf, fundHotWallet, keyOf, transfersFrom } from '../helpers/evm-account.ts'
import {
  call,
  eventually,
  paidTransaction,
  postgresUrlOf,
  type TestMerchant,
  workerEnv,
} from '../helpers/harness.ts'
import { newPayout } from '../helpers/payouts.ts'
import { type HeldLocks, holdLocks, onPostgres, sessionUrl } from '../helpers/postgres.ts'
import { assertLedgerVerifies, assertRunning, START_DEADLINE_MS } from '../helpers/processes.ts'
import { freePort, type Program, spawnProgram, stopProgram } from '../helpers/program.ts'
import { beforeClose, suiteContext } from '../helpers/suite.ts'

/**
 * Two worker processes (`serve --role worker`, the real program) pay 100 ERC-20 payouts from one hot wallet at the
 * same time, on one PostgreSQL database and a local Hardhat node with TestUSDT (docs/CONNECTORS.md, The evm-erc20
 * kind).
 *
 * The payouts are made through the API (in this process) while the account's RPC URL points at a port nobody
 * listens on: none is handed over, none is signed, and each waits `pending` for a worker to hand it over again
 * (PROVIDER_RECHECK_MS, 1 ms here, so at once). The URL is then set to the node's and the two workers started. So
 * that both sign, and at the same moment, the test holds two locks of its own: on half of the payouts (a worker's
 * claim skips locked rows, so the first worker to look claims only the other half), and on `chain_wallets` in SHARE
 * mode (a worker about to sign waits on its first write there, its payouts job held up meanwhile). Once the first
 * half is claimed, the payouts' locks go: the other worker, idle, claims the second half at its next look (the
 * payouts job looks every second). Once each worker waits on the wallet, that lock goes too, and both sign and
 * broadcast from there, each transfer under the wallet's nonce lock. The node mines only when the test asks, and
 * keeps meanwhile what it is sent, in any nonce order, as a chain's nodes do.
 *
 * Then: every payout completed; one token Transfer per recipient, of the exact amount, in the transaction the payout
 * names; the first transactions' nonces exactly 0..99, one per payout (a replacement reuses its nonce), and the node
 * counts as many transactions from the wallet; both workers stop cleanly; `ledger verify` is clean. About 30 s on an
 * idle 2-core machine (up to 60 s on a busy one), most of it the programs' starts and stops (tsx compiles each
 * first) and the node's start.
 */

onPostgres()

const MODE: Mode = 'test'
const PAYOUTS = 100
const CONFIRMATIONS = 2
/** Blocks a transfer may wait unmined before it is replaced: far more than the test mines before all are in. */
const REPLACE_AFTER = 10
const WORKERS = ['mg-evm-worker-1', 'mg-evm-worker-2'] as const

describe('ERC-20 payouts from one hot wallet, paid by two worker processes (PostgreSQL)', () => {
  // A payout whose hand-over got no answer is due for the next one at once.
  const ctx = suiteContext('postgres', { config: { providerRecheckMs: 1 } })
  const evm = suiteEvm()
  const hotKey = keyOf('hot wallet of two workers')
  const hot = privateKeyToAccount(hotKey).address
  const accountName = 'usdt-two-workers'
  const recipients = Array.from({ length: PAYOUTS }, (_, i) => addressOf(`two workers recipient ${i}`))
  let databaseUrl = ''
  let merchant: TestMerchant
  /** The payouts' uuids, in the order of `recipients`. */
  const uuids: string[] = []
  const workers: Program[] = []
  /** Locks the test holds, let go when the suite ends however it ends. */
  const held: HeldLocks[] = []

  before(async () => {
    databaseUrl = await postgresUrlOf(ctx)
    await fundHotWallet(evm, hot, 10_000_000_000n)
    await addEvmAccount(ctx, evm, {
      name: accountName,
      mode: MODE,
      key: hotKey,
      confirmations: CONFIRMATIONS,
      replaceAfterBlocks: REPLACE_AFTER,
      rpcUrl: `http://127.0.0.1:${await freePort()}`,
    })
    merchant = await ctx.newMerchant('Two workers')
    const paid = await paidTransaction(
      ctx,
      { amount: 500000, currency: 'USD', payment_method: 'card' },
      { merchant, mode: MODE },
    )
    assert.equal(paid.status, 'paid')
  })

  beforeClose(ctx, async () => {
    for (const lock of held) await lock.release()
    await Promise.all(workers.map((worker) => stopProgram(worker, 'SIGKILL')))
  })

  /** Holds the locks `lock` takes (see `holdLocks`) until `release`, or until the suite ends. */
  async function hold(lock: (trx: Db) => Promise<unknown>): Promise<HeldLocks> {
    const locks = await holdLocks(ctx.db, lock)
    held.push(locks)
    return locks
  }

  const amountOf = (i: number) => 1000 + i
  const payoutRows = () =>
    ctx.db.selectFrom('payouts').selectAll().where('uuid', 'in', uuids).orderBy('created_at').execute()
  const chainTransactions = () =>
    ctx.db.selectFrom('chain_transactions').selectAll().orderBy('nonce').orderBy('created_at').execute()
  /** Fails with `error` and how many payouts stand in each status. */
  const withStatuses = async (error: Error): Promise<never> => {
    const counts: Record<string, number> = {}
    for (const row of await payoutRows()) counts[row.status] = (counts[row.status] ?? 0) + 1
    throw new Error(`${error.message}: ${JSON.stringify(counts)}`)
  }
  const assertWorkersRunning = () => {
    for (const [i, worker] of workers.entries()) assertRunning(worker, WORKERS[i])
  }
  /** How many of `some` payouts a worker has claimed: their next check pushed past now by the claim's lease. */
  const claimed = async (some: string[]) => {
    const rows = await ctx.db
      .selectFrom('payouts')
      .select('uuid')
      .where('uuid', 'in', some)
      .where('next_check_at', '>', new Date())
      .execute()
    return rows.length
  }
  /** The workers (by their sessions' application_name) waiting on a lock to write the hot wallet's row. */
  const waitingOnWallet = async () => {
    const { rows } = await sql<{ name: string }>`
      SELECT DISTINCT application_name AS name FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%chain_wallets%'`.execute(
      ctx.db,
    )
    return rows.map((row) => row.name).sort()
  }

  /** Payout `i`: its amount to its recipient, through the API. */
  const makePayout = (i: number) =>
    call(
      ctx,
      'POST',
      '/integration/payouts',
      newPayout({ amount: amountOf(i), destination: { network: 'ERC20', address: recipients[i] } }),
      { as: { merchant, mode: MODE }, auth: 'signature', idempotencyKey: `two-workers-${i}` },
    )

  it('takes the payouts while the chain does not answer: each waits pending, nothing signed', async () => {
    for (let from = 0; from < PAYOUTS; from += 10) {
      const batch = Array.from({ length: 10 }, (_, j) => from + j)
      for (const res of await Promise.all(batch.map(makePayout))) {
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(res.json().status, 'pending')
        uuids.push(res.json().uuid)
      }
    }
    const rows = await payoutRows()
    assert.equal(rows.length, PAYOUTS)
    assert.ok(rows.every((row) => row.status === 'pending' && row.account_uuid && row.destination_sealed))
    assert.deepEqual(await chainTransactions(), [])
    assert.equal(await evm.node.public.getTransactionCount({ address: hot }), 0)
  })

  it('two workers hand them over at once, each signing under the wallet lock', async (t) => {
    assert.equal(uuids.length, PAYOUTS, 'the payouts were made')
    const second = uuids.slice(PAYOUTS / 2)
    const first = uuids.slice(0, PAYOUTS / 2)
    // Which process signed each transaction: the application_name of its database connection, kept beside it.
    await sql`CREATE TABLE signed_by (hash text PRIMARY KEY, name text NOT NULL, at timestamptz NOT NULL)`.execute(
      ctx.db,
    )
    await sql`CREATE FUNCTION keep_signer() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO signed_by VALUES (NEW.hash, current_setting('application_name'), clock_timestamp());
        RETURN NEW;
      END $$`.execute(ctx.db)
    await sql`CREATE TRIGGER keep_signer AFTER INSERT ON chain_transactions
      FOR EACH ROW EXECUTE FUNCTION keep_signer()`.execute(ctx.db)
    const payoutLocks = await hold((trx) =>
      trx.selectFrom('payouts').select('uuid').where('uuid', 'in', second).forUpdate().execute(),
    )
    const walletLock = await hold((trx) => sql`LOCK TABLE chain_wallets IN SHARE MODE`.execute(trx))
    await ctx.services.providers.accounts.update(accountName, { settings: { rpc_url: evm.node.url } })
    // Blocks from here on are the test's: the node keeps what it is sent in its pool, as a chain's nodes do. Each
    // worker broadcasts what it signed as soon as it is kept, so the nonces may reach the node out of order, and
    // an automining Hardhat refuses a nonce above the next one (it cannot queue).
    await evm.node.test.setAutomine(false)

    const started = Date.now()
    for (const name of WORKERS)
      workers.push(spawnProgram(['serve', '--role', 'worker'], workerEnv(sessionUrl(databaseUrl, name))))
    await eventually(
      async () => {
        assertWorkersRunning()
        return (await claimed(first)) === first.length && (await waitingOnWallet()).length > 0
      },
      START_DEADLINE_MS,
      50,
    )
    const firstWaiting = await waitingOnWallet()
    await payoutLocks.release()
    // Whichever worker is not held up on the wallet claims the rest, and waits on the wallet in turn.
    await eventually(
      async () => {
        assertWorkersRunning()
        return (await waitingOnWallet()).length === WORKERS.length
      },
      START_DEADLINE_MS,
      50,
    )
    assert.deepEqual(await waitingOnWallet(), [...WORKERS])
    t.diagnostic(
      `both workers waited on the wallet ${Date.now() - started} ms after their start (${firstWaiting.join(', ')} first)`,
    )
    assert.deepEqual(await chainTransactions(), [], 'nothing signed while the wallet is locked')
    await walletLock.release()

    await eventually(
      async () => {
        assertWorkersRunning()
        const rows = await payoutRows()
        return rows.every((row) => row.status !== 'pending')
      },
      60_000,
      100,
    ).catch(withStatuses)
    t.diagnostic(`every payout handed over ${Date.now() - started} ms after the workers' start`)
    const { rows: signers } = await sql<{ name: string }>`SELECT name FROM signed_by ORDER BY at`.execute(
      ctx.db,
    )
    const counts = Object.fromEntries(
      WORKERS.map((name) => [name, signers.filter((s) => s.name === name).length]),
    )
    let switches = 0
    for (let i = 1; i < signers.length; i++) if (signers[i]?.name !== signers[i - 1]?.name) switches++
    t.diagnostic(`signed: ${JSON.stringify(counts)}, the signer changed ${switches} times`)
    // Every transaction was signed by one of the workers, and each signed some.
    assert.equal(signers.length, (await chainTransactions()).length)
    assert.deepEqual([...new Set(signers.map((s) => s.name))].sort(), [...WORKERS])
  })

  it('pays each payout once, to the exact amount, from nonces 0 to 99 without a gap', async (t) => {
    const started = Date.now()
    // A block a poll: the transfers in the node's pool are mined in the first, and the next gives the confirmations.
    await eventually(
      async () => {
        assertWorkersRunning()
        await evm.node.test.mine({ blocks: 1 })
        const rows = await payoutRows()
        return rows.every((row) => row.status === 'completed')
      },
      60_000,
      250,
    ).catch(withStatuses)
    t.diagnostic(`every payout completed ${Date.now() - started} ms later`)

    const rows = await payoutRows()
    const kept = await chainTransactions()
    const firsts = kept.filter((tx) => tx.replaces_uuid === null)
    // One first transaction per payout, their nonces exactly 0..99.
    assert.deepEqual(
      firsts.map((tx) => Number(tx.nonce)),
      Array.from({ length: PAYOUTS }, (_, i) => i),
    )
    assert.deepEqual(new Set(firsts.map((tx) => tx.payout_uuid)), new Set(uuids))
    assert.ok(kept.every((tx) => tx.wallet === hot))
    // A replacement (if any) reuses the nonce of the payout's transaction it replaces.
    const byUuid = new Map(kept.map((tx) => [tx.uuid, tx]))
    for (const tx of kept.filter((tx) => tx.replaces_uuid !== null)) {
      const replaced = byUuid.get(tx.replaces_uuid as string)
      assert.equal(replaced?.payout_uuid, tx.payout_uuid)
      assert.equal(Number(replaced?.nonce), Number(tx.nonce))
    }
    const nonces = new Set(kept.map((tx) => Number(tx.nonce)))
    assert.equal(nonces.size, PAYOUTS)
    assert.equal(await evm.node.public.getTransactionCount({ address: hot }), nonces.size)
    const wallet = await ctx.db.selectFrom('chain_wallets').selectAll().executeTakeFirstOrThrow()
    assert.equal(Number(wallet.next_nonce), PAYOUTS)

    // Exactly one transfer per recipient, of the payout's amount, in the transaction the payout names.
    const transfers = await transfersFrom(evm, hot)
    assert.equal(transfers.length, PAYOUTS)
    const byRecipient = new Map<Address, typeof transfers>()
    for (const transfer of transfers) {
      const to = transfer.args.to as Address
      byRecipient.set(to, [...(byRecipient.get(to) ?? []), transfer])
    }
    const keptOf = (uuid: string) => kept.filter((tx) => tx.payout_uuid === uuid).map((tx) => tx.hash)
    for (const [i, to] of recipients.entries()) {
      const row = rows.find((r) => r.uuid === uuids[i])
      assert.ok(row)
      assert.equal(row.amount, amountOf(i))
      const [only, ...others] = byRecipient.get(to) ?? []
      assert.ok(only, `a transfer to recipient ${i}`)
      assert.equal(others.length, 0, `one transfer to recipient ${i}`)
      assert.equal(only.args.value, minorToTokenUnits(row.amount_usdt_micro, 6))
      assert.equal(only.transactionHash, row.transaction_hash)
      assert.ok(keptOf(row.uuid).includes(only.transactionHash), 'one of the payout kept')
      assert.equal(row.provider_reference, keptOf(row.uuid)[0])
    }
    t.diagnostic(`${kept.length - firsts.length} replacement(s) signed`)
  })

  it('the workers stop cleanly, and the ledger verifies', async (t) => {
    const started = Date.now()
    const codes = await Promise.all(workers.map((worker) => stopProgram(worker, 'SIGTERM', 15_000)))
    for (const [i, worker] of workers.entries())
      assert.equal(codes[i], 0, `${WORKERS[i]}:\n${worker.output()}`)
    t.diagnostic(`the workers stopped ${Date.now() - started} ms after SIGTERM`)
    await assertLedgerVerifies(workerEnv(databaseUrl))
  })
})
