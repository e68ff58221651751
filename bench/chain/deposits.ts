/**
 * Chain deposits benchmark: the chain watcher of an `evm-erc20` account following `--per-block` USDT deposits in
 * every block, a block a second, on a local Hardhat node, through the real server (`serve --role api` and one
 * `serve --role worker`) on PostgreSQL.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/chain/deposits.ts \
 *     [--per-block 200] [--blocks 20] [--confirmations 3] [--block-ms 1000] [--watch-ms 200] [--source] \
 *     [--keep-database]
 *
 * It makes `--per-block` × `--blocks` usdt_erc20 payments through the API first, and signs each one's transfer of its
 * exact amount. Then, each `--block-ms`, it sends one block's transfers and mines them into one block, while it
 * samples the watcher's cursor against the chain's head every 100 ms. It reports the lag in blocks (the target: at
 * most one), the time from a block's mining to the cursor passing it, and checks that every payment ends paid with
 * exactly its amount received, each transfer recorded once.
 *
 * It prints its report and records it in bench/results/<date>T<time>-deposits.md (bench/lib.ts, writeResult).
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Address, Hex } from 'viem'
import { HDKey } from 'viem/accounts'
import { transferCalldata } from '../../src/chain/token.ts'
import { deployTestUsdt, startEvmNode } from '../../test/helpers/evm.ts'
import { keyOf } from '../../test/helpers/evm-account.ts'
import { benchDatabase, benchEnv, fmt, round, type Server, sleep, writeResult } from '../lib.ts'
import { chainBenchOptions, serveChainGateway, stopChainBench } from './gateway.ts'

const { values, confirmations, blockMs } = chainBenchOptions({
  'per-block': '200',
  blocks: '20',
  'watch-ms': '200',
})
const PER_BLOCK = Number(values['per-block'])
const BLOCKS = Number(values.blocks)
/** The watcher may trail the head by this many blocks at the most. */
const TARGET_LAG = 1
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const masterKey = randomBytes(32).toString('hex')
const log = (line: string) => process.stderr.write(`[bench:deposits] ${line}\n`)
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN

async function main() {
  const node = await startEvmNode()
  const servers: Server[] = []
  const database = await benchDatabase(adminUrl, 'deposits')
  const db = new pg.Pool({ connectionString: database.url, max: 1 })
  try {
    const usdt = await deployTestUsdt(node)
    const xpub = HDKey.fromMasterSeed(new Uint8Array(32).fill(3)).derive("m/44'/60'/0'").publicExtendedKey
    const gateway = await serveChainGateway({
      env: benchEnv(database.url, masterKey),
      node,
      usdt,
      merchant: 'Chain deposits',
      confirmations,
      secrets: { hot_wallet_key: keyOf('bench deposits hot wallet'), deposit_xpub: xpub },
      route: { subject: 'payment', method: 'usdt_erc20' },
      source: values.source,
      servers,
      workerEnv: { CHAIN_WATCH_INTERVAL_MS: String(values['watch-ms']) },
    })

    const total = PER_BLOCK * BLOCKS
    log(`making ${total} usdt_erc20 payments`)
    const payments: { uuid: string; to: Address; units: bigint }[] = []
    for (let i = 0; i < total; i += 50)
      payments.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(50, total - i) }, async (_, j) => {
            const payment = await gateway.transactions.create({
              external_id: `deposit-${i + j}`,
              amount: 1_000_000 + i + j,
              currency: 'USDT',
              payment_method: 'usdt_erc20',
            })
            const requisites = payment.requisites as Record<string, string>
            return {
              uuid: payment.uuid,
              to: requisites.address as Address,
              units: BigInt(requisites.amount_units as string),
            }
          }),
        )),
      )
    log('signing the transfers')
    const payer = node.accounts[0] as (typeof node.accounts)[number]
    const firstNonce = await node.public.getTransactionCount({ address: payer.address, blockTag: 'pending' })
    const raws: Hex[] = []
    for (const [i, p] of payments.entries())
      raws.push(
        await payer.signTransaction({
          type: 'eip1559',
          chainId: node.chain.id,
          nonce: firstNonce + i,
          to: usdt.address,
          data: transferCalldata(p.to, p.units),
          gas: 100_000n,
          maxFeePerGas: 100_000_000_000n,
          maxPriorityFeePerGas: 1_000_000_000n,
        }),
      )

    await node.test.setAutomine(false)
    const head = async () => Number(await node.public.getBlockNumber())
    const cursor = async () =>
      Number((await db.query<{ n: string }>('SELECT block_number AS n FROM chain_cursors')).rows[0]?.n ?? 0)
    // The cursor is at the head before the first deposit block.
    for (const deadline = Date.now() + 60_000; (await cursor()) < (await head()) && Date.now() < deadline; )
      await sleep(100)

    const lags: number[] = []
    const minedAt = new Map<number, number>()
    const passedAt = new Map<number, number>()
    let sending = true
    const sampling = (async () => {
      while (sending || passedAt.size < minedAt.size) {
        const [h, c] = await Promise.all([head(), cursor()])
        const now = performance.now()
        lags.push(h - c)
        for (const [block] of minedAt) if (!passedAt.has(block) && c >= block) passedAt.set(block, now)
        await sleep(100)
      }
    })()
    log(`${BLOCKS} blocks of ${PER_BLOCK} deposits, one every ${blockMs} ms`)
    const started = performance.now()
    for (let b = 0; b < BLOCKS; b++) {
      const due = started + b * blockMs
      if (due > performance.now()) await sleep(due - performance.now())
      const batch = raws.slice(b * PER_BLOCK, (b + 1) * PER_BLOCK)
      await Promise.all(batch.map((raw) => node.public.sendRawTransaction({ serializedTransaction: raw })))
      await node.test.mine({ blocks: 1 })
      const mined = await head()
      minedAt.set(mined, performance.now())
    }
    const sendSeconds = (performance.now() - started) / 1000
    await sleep(blockMs)
    sending = false
    await sampling
    // The last deposits' confirmations, then every payment paid.
    await node.test.setIntervalMining({ interval: blockMs / 1000 })
    const unpaid = async () =>
      Number(
        (
          await db.query<{ n: string }>(
            "SELECT count(*) AS n FROM transactions WHERE payment_method = 'usdt_erc20' AND status <> 'paid'",
          )
        ).rows[0]?.n,
      )
    for (const deadline = Date.now() + 120_000; (await unpaid()) > 0 && Date.now() < deadline; )
      await sleep(250)
    const counts = (
      await db.query<{ paid: string; exact: string; transfers: string; blocks: string }>(
        `SELECT
           (SELECT count(*) FROM transactions WHERE payment_method = 'usdt_erc20' AND status = 'paid') AS paid,
           (SELECT count(*) FROM transactions t JOIN chain_deposits d ON d.transaction_uuid = t.uuid
             WHERE t.amount_received = d.amount) AS exact,
           (SELECT count(*) FROM chain_transfers) AS transfers,
           (SELECT count(DISTINCT block_number) FROM chain_transfers) AS blocks`,
      )
    ).rows[0]
    const sortedLags = [...lags].sort((a, b) => a - b)
    const readMs = [...passedAt].map(([block, at]) => at - (minedAt.get(block) ?? at)).sort((a, b) => a - b)
    const maxLag = sortedLags.at(-1) ?? NaN
    const allPaid = Number(counts?.paid) === total && Number(counts?.exact) === total
    const met = allPaid && Number(counts?.transfers) === total && maxLag <= TARGET_LAG
    const report = [
      '| deposits | blocks | per block | block every | lag p50 | lag p99 | lag max | vs ≤ 1 block | mined → read p50 | p99 | max |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      `| ${total} | ${BLOCKS} in ${round(sendSeconds)} s | ${PER_BLOCK} | ${blockMs} ms | ${pct(sortedLags, 0.5)} | ${pct(sortedLags, 0.99)} | ${maxLag} | ${maxLag <= TARGET_LAG ? 'met' : 'not met'} | ${fmt(pct(readMs, 0.5), 0)} ms | ${fmt(pct(readMs, 0.99), 0)} ms | ${fmt(readMs.at(-1) ?? NaN, 0)} ms |`,
      '',
      `Lag: the chain's head less the watcher's cursor, in blocks, sampled every 100 ms (${lags.length} samples). Paid with exactly the amount received: ${counts?.exact} of ${total}; paid in all: ${counts?.paid}; transfers recorded: ${counts?.transfers} (in ${counts?.blocks} blocks).`,
      `Target (${PER_BLOCK} deposits a block at a block a second, the watcher at most one block behind, every deposit counted once): ${met ? 'met' : 'not met'}.`,
    ].join('\n')
    process.stdout.write(
      writeResult('deposits', database.info, report, [
        [
          'chain',
          `Hardhat Network (hardhat node), a block mined every ${blockMs} ms with ${PER_BLOCK} transfers, ${confirmations} confirmations`,
        ],
        [
          'server',
          `${values.source ? 'sources (tsx)' : 'production build'}, one API and one worker process, CHAIN_WATCH_INTERVAL_MS=${values['watch-ms']}`,
        ],
      ]),
    )
  } finally {
    await db.end()
    await stopChainBench(servers, node, database, values['keep-database'])
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
