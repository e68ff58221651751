import type { AddressInfo } from 'node:net'
import { parseAcquirerCallback } from '../../src/connectors/http-acquirer/callbacks.ts'
import {
  newCallbackSecret,
  signCallback,
  verifyCallback,
} from '../../src/connectors/http-acquirer/signature.ts'
import type { ConnectorKind } from '../../src/connectors/kinds.ts'
import { buildConnector } from '../../src/connectors/registry.ts'
import { SimulatorAccountConnector } from '../../src/connectors/simulator/account.ts'
import type { AccountConnector } from '../../src/connectors/types.ts'
import { buildEmulator } from '../../src/emulator/server.ts'
import { connectorKit, type KitKind, type KitProvider } from './kit.ts'

/**
 * Every connector kind that takes payments, registered in the kit: a new kind adds its entry here (a record, so
 * the type check fails until it does). `evm-erc20` only pays out, from its own hot wallet: its suite runs against
 * a local chain (test/chain/evm-payouts.test.ts).
 */
const KINDS: Record<Exclude<ConnectorKind, 'evm-erc20'>, Omit<KitKind, 'kind'>> = {
  simulator: {
    slow: false,
    signedCallbacks: false,
    refundsAndPayouts: false,
    async start() {
      const connector = new SimulatorAccountConnector()
      return {
        connector,
        decide: simulatorDecides(connector),
        unknownReference: 'sim_never-given',
        unknownAnswer: 'no_answer',
        // The simulator serves test mode only, and has neither settings nor secrets.
        account: { mode: 'test', settings: {}, secrets: {} },
        close: () => connector.close(),
      }
    },
    // The simulator holds the payments it took in the connector itself: the gateway's, for those it handed over.
    decideIn: (connector) => simulatorDecides(connector),
  },
  'http-acquirer': {
    slow: true,
    signedCallbacks: true,
    refundsAndPayouts: true,
    async start() {
      // Refunds wait for the provider's decision, as payouts do.
      const faults = { refunds: 'pending' } as const
      const emulator = buildEmulator({ apiKey: 'sk_kit', publicUrl: 'http://emulator.test', faults })
      await emulator.listen({ port: 0, host: '127.0.0.1' })
      const base = `http://127.0.0.1:${(emulator.server.address() as AddressInfo).port}`
      const connector = buildConnector(
        'http-acquirer',
        { base_url: `${base}/v1`, timeout_ms: 2000 },
        { api_key: 'sk_kit' },
      )
      const admin = async (method: string, path: string, body: unknown) => {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
      }
      const secret = newCallbackSecret()
      const STATUS = { paid: 'succeeded', failed: 'failed', expired: 'expired' } as const
      let sequence = 0
      return {
        connector,
        decide: (reference, outcome) =>
          admin('POST', `/admin/payments/${reference}/decide`, { status: STATUS[outcome] }),
        decidePayout: (reference, outcome) =>
          admin('POST', `/admin/payouts/${reference}/decide`, { status: outcome }),
        decideRefund: (reference, outcome) =>
          admin('POST', `/admin/refunds/${reference}/decide`, { status: outcome }),
        unknownReference: 'acq_never-given',
        unknownAnswer: 'unknown',
        slow: {
          start: () => admin('PUT', '/admin/faults', { ...faults, timeout_rate: 1 }),
          restore: () => admin('PUT', '/admin/faults', faults),
        },
        account: {
          mode: 'live',
          settings: { base_url: `${base}/v1`, timeout_ms: '2000' },
          secrets: { api_key: 'sk_kit' },
        },
        callbacks: {
          signed(reference, outcome, options = {}) {
            const id = `evt_kit_${++sequence}`
            const body = JSON.stringify({
              id,
              type: `payment.${STATUS[outcome]}`,
              data: { reference, amount: options.amount ?? 150_000, currency: options.currency ?? 'RUB' },
            })
            return {
              body,
              headers: signCallback([options.secret ?? secret], id, options.at ?? new Date(), body),
            }
          },
          verify: (body, headers) => verifyCallback(body, headers, [secret]),
          read(body) {
            const parsed = parseAcquirerCallback(body)
            if (!('callback' in parsed)) return null
            const [subject, event] = parsed.callback.type.split('.')
            const outcome = { succeeded: 'paid', failed: 'failed', expired: 'expired' }[event as string]
            return subject === 'payment' && outcome
              ? { reference: parsed.callback.data.reference, outcome: outcome as 'paid' }
              : null
          },
          otherSecret: newCallbackSecret(),
        },
        async close() {
          await connector.close()
          await emulator.close()
        },
      }
    },
  },
}

/** The simulator decides a payment `connector` took (the sandbox's decision). */
function simulatorDecides(connector: AccountConnector): KitProvider['decide'] {
  return async (reference, outcome) => {
    if (!(connector instanceof SimulatorAccountConnector) || !connector.decide(reference, outcome))
      throw new Error(`the simulator holds no ${reference}`)
  }
}

for (const kind of Object.keys(KINDS) as (keyof typeof KINDS)[]) connectorKit({ kind, ...KINDS[kind] })
