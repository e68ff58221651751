/**
 * Chain payouts benchmark: ERC-20 payouts from one hot wallet of an `evm-erc20` account, on a local Hardhat node
 * that mines a block every `--block-ms`, through the real server (`serve --role api` and one `serve --role worker`)
 * on PostgreSQL.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/chain/run.ts \
 *     [--payouts 120] [--rate 2] [--confirmations 3] [--block-ms 1000] [--source] [--keep-database]
 *
 * It makes `--payouts` payouts of 1.00 USD (1 USDT) at `--rate` a second through the API (each to an address of its
 * own), then follows each until it is `completed` (its transfer mined and `--confirmations` deep), and reports the
 * payouts completed per minute over the whole run against the target of 60 a minute, the time from create to
 * completed (p50, p99, max), and checks that each recipient got exactly one transfer of exactly 1 USDT and that the
 * hot wallet's nonces have no gap.
 *
 * It prints its report and records it in bench/results/<date>T<time>-chain.md (bench/lib.ts, writeResult).
 */
import { randomBytes } from 'node:crypto'
import type { Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { deployTestUsdt, startEvmNode } from '../../test/helpers/evm.ts'
import { addressOf, fundHotWallet, keyOf, transfersFrom } from '../../test/helpers/evm-account.ts'
import { benchDatabase, benchEnv, fmt, round, type Server, sleep, writeResult } from '../lib.ts'
import { chainBenchOptions, serveChainGateway, stopChainBench } from './gateway.ts'

const { values, confirmations, blockMs } = chainBenchOptions({ payouts: '120', rate: '2' })
const PAYOUTS = Number(values.payouts)
const RATE = Number(values.rate)
/** Payouts a minute from one hot wallet. */
const TARGET_PER_MINUTE = 60
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const masterKey = randomBytes(32).toString('hex')
const log = (line: string) => process.stderr.write(`[bench:chain] ${line}\n`)

async function main() {
  const node = await startEvmNode()
  const servers: Server[] = []
  const database = await benchDatabase(adminUrl, 'chain')
  try {
    const usdt = await deployTestUsdt(node)
    const hotKey: Hex = keyOf('bench hot wallet')
    const hot = privateKeyToAccount(hotKey).address
    await fundHotWallet({ node, usdt }, hot, BigInt(PAYOUTS) * 2_000_000n)
    // Blocks at a steady pace from now on, as on a chain, whether or not transactions wait.
    await node.test.setAutomine(false)
    await node.test.setIntervalMining({ interval: blockMs / 1000 })

    const gateway = await serveChainGateway({
      env: benchEnv(database.url, masterKey),
      node,
      usdt,
      merchant: 'Chain payouts',
      confirmations,
      secrets: { hot_wallet_key: hotKey },
      route: { subject: 'payout', method: 'usdt_wallet', network: 'ERC20' },
      source: values.source,
      servers,
      // 1 USDT = 1 USD: a payout of 1.00 USD sends 1 USDT.
      more: (services) => services.rates.setMarketRate('USD', '1'),
    })
    // The merchant's USDT: one test payment, paid in the sandbox (test money is available at once).
    const funding = await gateway.transactions.create({
      external_id: 'bench-funding',
      amount: PAYOUTS * 200,
      currency: 'USD',
      payment_method: 'card',
    })
    await gateway.sandbox.transactions.paid(funding.uuid)

    log(`${PAYOUTS} payouts at ${RATE}/s, a block every ${blockMs} ms, ${confirmations} confirmations`)
    const recipients = Array.from({ length: PAYOUTS }, (_, i) => addressOf(`bench recipient ${i}`))
    const createdAt = new Map<string, number>()
    const completedAt = new Map<string, number>()
    const started = performance.now()
    const making = recipients.map(async (address, i) => {
      const due = started + (i * 1000) / RATE
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
      const at = performance.now()
      const payout = await gateway.payouts.create({
        external_id: `bench-${i}`,
        amount: 100,
        currency: 'USD',
        method: 'usdt_wallet',
        destination: { network: 'ERC20', address },
      })
      createdAt.set(payout.uuid, at)
    })
    // Each open payout is looked at every 250 ms until it is completed (or the deadline passes).
    const deadline = started + ((PAYOUTS / RATE) * 1000 + 120_000) * 3
    let failed = 0
    const following = (async () => {
      while (completedAt.size + failed < PAYOUTS && performance.now() < deadline) {
        await sleep(250)
        const open = [...createdAt.keys()].filter((uuid) => !completedAt.has(uuid))
        const now = performance.now()
        for (const payout of await Promise.all(open.map((uuid) => gateway.payouts.get(uuid)))) {
          if (payout.status === 'completed') completedAt.set(payout.uuid, now)
          if (payout.status === 'failed') failed++
        }
      }
    })()
    await Promise.all(making)
    await following
    const lastCreate = Math.max(...createdAt.values())
    const elapsedS = (Math.max(...completedAt.values()) - started) / 1000
    const perMinute = (completedAt.size / elapsedS) * 60
    const latencies = [...completedAt].map(([uuid, at]) => (at - (createdAt.get(uuid) ?? at)) / 1000)
    latencies.sort((a, b) => a - b)
    const pct = (p: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN

    // On the chain: one transfer of exactly 1 USDT to each recipient, and the wallet's nonces without a gap.
    const transfers = await transfersFrom({ node, usdt }, hot)
    const received = new Map<string, bigint[]>()
    for (const t of transfers)
      received.set(t.args.to as string, [
        ...(received.get(t.args.to as string) ?? []),
        t.args.value as bigint,
      ])
    const exactlyOnce = recipients.every((r) => {
      const got = received.get(r)
      return got?.length === 1 && got[0] === 1_000_000n
    })
    const nonceCount = await node.public.getTransactionCount({ address: hot })
    const blocks = Number(await node.public.getBlockNumber())

    const met = completedAt.size === PAYOUTS && exactlyOnce && perMinute >= TARGET_PER_MINUTE
    const report = [
      '| payouts | offered | completed | failed | per minute | vs 60/min | create → completed p50 | p99 | max |',
      '|---|---|---|---|---|---|---|---|---|',
      `| ${PAYOUTS} | ${RATE}/s over ${round((lastCreate - started) / 1000)} s | ${completedAt.size} | ${failed} | ${fmt(perMinute)} | ${round(perMinute / TARGET_PER_MINUTE, 2)} × | ${round(pct(0.5), 1)} s | ${round(pct(0.99), 1)} s | ${round(latencies.at(-1) ?? NaN, 1)} s |`,
      '',
      `On the chain: ${transfers.length} transfers from the hot wallet, exactly one of 1 USDT to each recipient: ${exactlyOnce ? 'yes' : 'no'}; the wallet's nonce count ${nonceCount} (one a payout: ${nonceCount === PAYOUTS ? 'yes' : 'no'}); ${blocks} blocks.`,
      `Target (60 payouts a minute from one hot wallet, each paid once): ${met ? 'met' : 'not met'}.`,
    ].join('\n')
    process.stdout.write(
      writeResult('chain', database.info, report, [
        [
          'chain',
          `Hardhat Network (hardhat node), a block every ${blockMs} ms, ${confirmations} confirmations`,
        ],
        ['server', values.source ? 'sources (tsx)' : 'production build, one API and one worker process'],
      ]),
    )
  } finally {
    await stopChainBench(servers, node, database, values['keep-database'])
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
