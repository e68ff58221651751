import type { Command } from 'commander'
import { formatMinor } from '../../lib/money.ts'
import type { ResolvedReview, ReviewView } from './reviews.ts'
import type { TransactionService } from './service.ts'

/** How the operator's commands reach the services: open the database, run, print, turn refusals into messages. */
export interface PaymentCommandContext {
  withTransactions<T>(work: (transactions: TransactionService) => Promise<T>): Promise<T>
  out(line: string): void
  parseCount(name: string, value: string, max: number): number
}

const reviewLine = (r: ReviewView) =>
  `${r.payment_uuid}  ${r.status}  ${r.mode}  merchant ${r.merchant_uuid}  payment ${r.payment_status} ` +
  `${formatMinor(r.amount, r.currency)}  reported ${formatMinor(r.reported_amount, r.reported_currency)} ` +
  `by ${r.account}  opened ${r.opened_at.toISOString()}` +
  (r.resolved_at ? `  resolved ${r.resolved_at.toISOString()}: ${r.resolution ?? ''}` : '')

/** `merchant-gateway payments …`: the operator's commands for payments (docs/OPERATIONS.md, Payments under review). */
export function registerPaymentCommands(program: Command, context: PaymentCommandContext): void {
  const { withTransactions, out } = context
  const payments = program.command('payments').description('Payments the operator looks after')

  payments
    .command('reviews')
    .description('List payments under review, newest first: a provider reported another amount or currency')
    .option('--open', 'only the reviews waiting for a decision')
    .option('--limit <n>', 'at most this many', (v: string) => context.parseCount('--limit', v, 1000), 100)
    .action((opts: { open?: boolean; limit: number }) =>
      withTransactions(async (transactions) => {
        for (const review of await transactions.reviews({ open: opts.open === true, limit: opts.limit }))
          out(reviewLine(review))
      }),
    )

  const review = payments.command('review').description("Resolve a payment's open review")
  review
    .command('accept <payment-uuid>')
    .description(
      'Accept the amount the provider received: the payment is paid for it, its fee worked out again',
    )
    .option('--note <text>', 'why, kept with the review')
    .action((uuid: string, opts: { note?: string }) =>
      withTransactions(async (transactions) => {
        const { review, payment } = await transactions.acceptReview(uuid, opts.note)
        out(
          `payment ${payment.uuid} is ${payment.status} for ${formatMinor(payment.amount, payment.currency)} ` +
            `(settles ${formatMinor(payment.settlement_amount, payment.settlement_currency)}); review ${review.status}`,
        )
      }),
    )
  review
    .command('refund <payment-uuid>')
    .description('Have the money returned: the payment ends failed; ask the provider for the return yourself')
    .option('--note <text>', 'why, kept with the review')
    .action((uuid: string, opts: { note?: string }) =>
      withTransactions(async (transactions) =>
        printRefunded(out, await transactions.refundReview(uuid, opts.note)),
      ),
    )
}

function printRefunded(
  out: (line: string) => void,
  { review, payment, providerReference }: ResolvedReview,
): void {
  out(`payment ${payment.uuid} is ${payment.status}; review ${review.status}`)
  out(
    `  ask ${review.account} to return ${formatMinor(review.reported_amount, review.reported_currency)} ` +
      `of its payment ${providerReference ?? '(no reference known)'} to the customer: the gateway does not ask it`,
  )
}
