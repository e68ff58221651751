import type { AddressInfo } from 'node:net'
import { before } from 'node:test'
import type { FastifyInstance } from 'fastify'
import type { Mode } from '../../src/db/types.ts'
import { buildEmulator, type EmulatorFaults, parseFaults } from '../../src/emulator/server.ts'
import type { TestContext } from './context.ts'
import { beforeClose } from './suite.ts'

export interface SuiteAcquirer {
  /** The emulator's root, e.g. http://127.0.0.1:41234. */
  base: string
  emulator: FastifyInstance
  /** The connector account's name and uuid. */
  account: { name: string; uuid: string }
  /** The account's callback signing secret. */
  secret: string
  /** Changes the emulator's faults through its admin API. */
  setFaults(faults: Partial<EmulatorFaults>): Promise<void>
}

/**
 * A provider emulator on a free local port for the suite, an `http-acquirer` account of `mode` at it, and the
 * operator's default route of `methods` to it, and of `payouts` (a payout method, and for USDT wallets a
 * network). With `gateway`, the emulator posts its callbacks to the account's callback URL there (the suite's
 * app must listen first); without, it sends none.
 */
export function suiteAcquirer(
  ctx: TestContext,
  options: {
    name?: string
    mode?: Mode
    methods?: string[]
    payouts?: { method: string; network?: string }[]
    faults?: Partial<EmulatorFaults>
    gateway?: () => string
    timeoutMs?: number
  } = {},
): SuiteAcquirer {
  const acquirer = {} as SuiteAcquirer
  const name = options.name ?? 'acquirer'
  const mode = options.mode ?? 'live'
  before(async () => {
    const added = await ctx.services.providers.accounts.add({
      name,
      kind: 'http-acquirer',
      mode,
      settings: { base_url: 'http://127.0.0.1:9/v1', timeout_ms: String(options.timeoutMs ?? 2000) },
      secrets: { api_key: `sk_${name}` },
    })
    const secret = added.callbackSecret as string
    ctx.secrets.push(secret, `sk_${name}`)
    const callbackUrl = options.gateway
      ? (added.account.callback_url as string).replace(ctx.config.publicBaseUrl, options.gateway())
      : undefined
    const emulator = buildEmulator({
      apiKey: `sk_${name}`,
      publicUrl: 'http://emulator.test',
      callbackUrl,
      callbackSecret: secret,
      callbackRetryMs: [50, 100, 200],
      faults: parseFaults(options.faults ?? {}),
    })
    await emulator.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(emulator.server.address() as AddressInfo).port}`
    await ctx.services.providers.accounts.update(name, { settings: { base_url: `${base}/v1` } })
    for (const method of options.methods ?? ['card'])
      await ctx.services.providers.routes.set({ merchantUuid: null, mode, subject: 'payment', method }, [
        name,
      ])
    for (const { method, network } of options.payouts ?? [])
      await ctx.services.providers.routes.set(
        { merchantUuid: null, mode, subject: 'payout', method, network },
        [name],
      )
    Object.assign(acquirer, {
      base,
      emulator,
      account: { name, uuid: added.account.uuid },
      secret,
      async setFaults(faults: Partial<EmulatorFaults>) {
        const res = await fetch(`${base}/admin/faults`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(faults),
        })
        if (!res.ok) throw new Error(`the emulator refused the faults: ${await res.text()}`)
      },
    })
  })
  beforeClose(ctx, () => acquirer.emulator?.close())
  return acquirer
}
