import type { Db } from '../../db/index.ts'
import type { TransactionRow } from '../../db/types.ts'
import { currencyExponent, minorToDecimal } from '../../lib/money.ts'
import type { MerchantService } from '../merchants/service.ts'
import type { ProviderService } from '../providers/service.ts'
import type { SandboxService } from '../sandbox/service.ts'
import type { TransactionService } from '../transactions/service.ts'

/** What the customer sees of a payment's status: refunds after payment are still a payment made. */
export type PageStatus = 'pending' | 'paid' | 'failed' | 'expired'

/** The hosted page's status endpoint: nothing a customer should not see (no ids, fees, keys or metadata). */
export interface PageStatusView {
  status: PageStatus
  /** The sentence the page shows for it. */
  message: string
  final: boolean
  expires_at: string
  /** Where the customer goes once the payment is final (success_url or fail_url), when the merchant set one. */
  redirect_url: string | null
}

const MESSAGES: Record<PageStatus, string> = {
  pending: 'Waiting for your payment…',
  paid: 'Payment received. Thank you!',
  failed: 'The payment did not go through.',
  expired: 'This payment link has expired.',
}

const TOKEN = /^[A-Za-z0-9_-]{22}$/

/** The amount as a customer reads it ("₽1,511.25", "¥1,500", "KWD 1,234.567") through Intl, exactly. */
export function formatAmount(amountMinor: number, currency: string, locale = 'en-US'): string {
  const exponent = currencyExponent(currency)
  const major = minorToDecimal(amountMinor, currency)
  // Intl formats a decimal string exactly (no float rounding); USDT is not an ISO code, so it gets its name.
  const value = major as unknown as number
  try {
    return new Intl.NumberFormat(locale, {
      style: 'currency',
      currency,
      currencyDisplay: 'narrowSymbol',
      minimumFractionDigits: exponent,
      maximumFractionDigits: exponent,
    }).format(value)
  } catch {
    const number = new Intl.NumberFormat(locale, {
      minimumFractionDigits: exponent,
      maximumFractionDigits: exponent,
    }).format(value)
    return `${number} ${currency}`
  }
}

export type CheckoutService = ReturnType<typeof createCheckoutService>

export interface CheckoutDeps {
  db: Db
  transactions: TransactionService
  merchants: MerchantService
  sandbox: SandboxService
  providers: Pick<ProviderService, 'handovers'>
  now: () => Date
}

/**
 * The hosted payment page (docs/API.md, The hosted payment page): reads a transaction by its page token, never
 * by its uuid.
 */
export function createCheckoutService(input: Omit<CheckoutDeps, 'now'> & { now?: () => Date }) {
  const deps: CheckoutDeps = { ...input, now: input.now ?? (() => new Date()) }
  return {
    page: (token: string) => checkoutPage(deps, token),
    status: (token: string) => checkoutStatus(deps, token),
    simulate: (token: string, outcome: 'paid' | 'failed') => simulateFromCheckout(deps, token, outcome),
  }
}

function pageStatus(deps: Pick<CheckoutDeps, 'now'>, row: TransactionRow): PageStatus {
  if (row.status === 'paid' || row.status === 'partially_refunded' || row.status === 'refunded') return 'paid'
  if (row.status === 'failed' || row.status === 'expired') return row.status
  // A pending payment past its deadline is expired to the customer, even before the expiry job marks it.
  return row.expires_at <= deps.now() ? 'expired' : 'pending'
}

function statusView(deps: Pick<CheckoutDeps, 'now'>, row: TransactionRow): PageStatusView {
  const status = pageStatus(deps, row)
  const final = status !== 'pending'
  return {
    status,
    message: MESSAGES[status],
    final,
    expires_at: row.expires_at.toISOString(),
    redirect_url: !final ? null : status === 'paid' ? row.success_url : row.fail_url,
  }
}

async function findByToken(
  deps: Pick<CheckoutDeps, 'transactions'>,
  token: string,
): Promise<TransactionRow | undefined> {
  return TOKEN.test(token) ? deps.transactions.findByPaymentToken(token) : undefined
}

/**
 * Where the customer pays a payment that a provider took, in either mode (a provider's sandbox is a test-mode
 * account): its payment page (an http or https address only), while the payment is pending to the customer; null
 * when the page itself is where they pay or wait. `sandbox`: the page may offer the simulate buttons, for a
 * test-mode payment no provider but the simulator has.
 */
async function providerPageOf(
  deps: Pick<CheckoutDeps, 'db' | 'providers'>,
  row: TransactionRow,
  status: PageStatus,
): Promise<{ page: string | null; sandbox: boolean }> {
  const held = await deps.providers.handovers.heldBy(deps.db, row.uuid)
  const sandbox = row.mode === 'test' && (!held || held.kind === 'simulator')
  if (status !== 'pending' || held?.state !== 'handed_over' || !held.redirect_url)
    return { page: null, sandbox }
  const page =
    /^https?:\/\//i.test(held.redirect_url) && URL.canParse(held.redirect_url) ? held.redirect_url : null
  return { page, sandbox }
}

/**
 * Everything the page shows, or null for a token that names nothing. `providerPage` is where the customer goes
 * to pay instead (docs/API.md, Live payments: the provider's page).
 */
export async function checkoutPage(deps: CheckoutDeps, token: string) {
  const row = await findByToken(deps, token)
  if (!row) return null
  const view = statusView(deps, row)
  const provider = await providerPageOf(deps, row, view.status)
  const merchant = await deps.merchants.getMerchant(row.merchant_uuid)
  return {
    token,
    merchantName: merchant?.name ?? '',
    amount: formatAmount(row.gross_amount, row.currency),
    currency: row.currency,
    description: row.description,
    paymentMethod: row.payment_method,
    requisites: row.requisites as Record<string, string> | null,
    testMode: row.mode === 'test',
    sandbox: provider.sandbox,
    providerPage: provider.page,
    ...view,
  }
}

export async function checkoutStatus(
  deps: Pick<CheckoutDeps, 'transactions' | 'now'>,
  token: string,
): Promise<PageStatusView | null> {
  const row = await findByToken(deps, token)
  return row ? statusView(deps, row) : null
}

/** A test-mode button: the simulated provider's callback, then the status as the customer sees it. */
export async function simulateFromCheckout(
  deps: Pick<CheckoutDeps, 'transactions' | 'sandbox' | 'now'>,
  token: string,
  outcome: 'paid' | 'failed',
): Promise<PageStatusView | null> {
  const row = await findByToken(deps, token)
  if (!row) return null
  return statusView(deps, await deps.sandbox.simulateFromPage(row, outcome))
}
