import assert from 'node:assert/strict'
import type { TestContext } from './context.ts'
import { spawnEmulator } from './processes.ts'
import { freePort, type Program } from './program.ts'

/** The acquirer as a real program beside a real gateway: `provider-emulator`, and the live account at it. */
export interface AcquirerProgram {
  program: Program
  /** The emulator's root, e.g. http://127.0.0.1:41234. */
  base: string
  /** The live `http-acquirer` account at it. */
  account: { uuid: string; name: string }
}

/**
 * What an operator sets up for a live acquirer, on the suite's database: an `http-acquirer` account of `name` at
 * a `provider-emulator` on a free port, taking `apiKey` and answered within `timeoutMs`; the default route of
 * live card payments to it, and of `payouts` (a payout method, and for USDT wallets a network). The emulator is
 * started as a program of its own, signing its callbacks to the account's callback URL at `gateway` (the
 * gateway's origin); `args` adds its other flags. Wait for it with `untilEmulatorListens(acquirer.program)`.
 */
export async function startAcquirerProgram(
  ctx: TestContext,
  options: {
    gateway: string
    apiKey: string
    name?: string
    timeoutMs?: number
    payouts?: { method: string; network?: string }[]
    args?: string[]
  },
): Promise<AcquirerProgram> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const added = await ctx.services.providers.accounts.add({
    name: options.name ?? 'acquirer',
    kind: 'http-acquirer',
    mode: 'live',
    settings: { base_url: `${base}/v1`, timeout_ms: String(options.timeoutMs ?? 5000) },
    secrets: { api_key: options.apiKey },
  })
  const account = { uuid: added.account.uuid, name: added.account.name }
  const routes = [
    { subject: 'payment' as const, method: 'card' },
    ...(options.payouts ?? []).map((payout) => ({ subject: 'payout' as const, ...payout })),
  ]
  for (const route of routes)
    await ctx.services.providers.routes.set({ merchantUuid: null, mode: 'live', ...route }, [account.name])
  const program = spawnEmulator({
    port,
    apiKey: options.apiKey,
    callbackUrl: `${options.gateway}/providers/${account.uuid}/callbacks`,
    callbackSecret: added.callbackSecret as string,
    args: options.args,
  })
  return { program, base, account }
}

/** A call to the admin API of the emulator at `base`, as its back office (or a test) makes it: its JSON. */
export async function emulatorAdmin(
  base: string,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: the admin API's answers
): Promise<any> {
  const res = await fetch(`${base}/admin${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  assert.equal(res.status, 200, `${method} /admin${path}: ${await res.clone().text()}`)
  return res.json()
}
