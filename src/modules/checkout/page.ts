import escapeHtml from 'escape-html'
import type { CheckoutService } from './service.ts'

type PageData = NonNullable<Awaited<ReturnType<CheckoutService['page']>>>

/** Labels a customer understands for the requisite fields the operator configures. */
const FIELD_LABELS: Record<string, string> = {
  card_number: 'Card number',
  holder_name: 'Recipient',
  bank_name: 'Bank',
  account_number: 'Account number',
  phone: 'Phone number',
  bik: 'BIC',
  network: 'Network',
  chain_id: 'Chain ID',
  token_contract: 'USDT contract',
  address: 'Deposit address',
  amount: 'Amount (USDT)',
  amount_units: "Amount in the token's smallest units",
}

/** What the amount is to the customer once the status is known: owed, paid, or not paid after all. */
const AMOUNT_LABELS: Record<PageData['status'], string> = {
  pending: 'Amount to pay',
  paid: 'Amount paid',
  failed: 'Amount not paid',
  expired: 'Amount not paid',
}

const label = (field: string) =>
  FIELD_LABELS[field] ?? field.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase())

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/pay/assets/checkout.css">
<script src="/pay/assets/checkout.js" defer></script>
</head>
<body>
${body}
</body>
</html>
`
}

/** The hosted payment page. Every value that comes from a merchant or a customer is escaped. */
export function renderPage(data: PageData): string {
  const requisites = data.requisites ? Object.entries(data.requisites) : []
  const requisiteRows = requisites
    .map(
      ([field, value], i) => `      <div class="requisite">
        <dt id="req-label-${i}">${escapeHtml(label(field))}</dt>
        <dd><span class="value" id="req-${i}">${escapeHtml(value)}</span>
          <button type="button" class="copy" data-copy="req-${i}" aria-describedby="req-label-${i}">Copy</button></dd>
      </div>`,
    )
    .join('\n')
  // A final payment needs no instructions or buttons: they are hidden (and the buttons off) from the start,
  // as the script hides them when the payment becomes final while the page is open.
  const hide = data.final ? ' hidden' : ''
  const requisitesSection = requisites.length
    ? `  <section class="requisites" aria-labelledby="requisites-heading"${hide}>
    <h2 id="requisites-heading">Transfer details</h2>
    <p class="hint">Send exactly <strong>${escapeHtml(data.amount)}</strong> to these details from your ${data.requisites?.token_contract ? 'wallet, on this network only' : 'banking app'}, before the time runs out. The payment is confirmed here automatically.</p>
    <dl>
${requisiteRows}
    </dl>
  </section>`
    : `  <p class="hint"${hide}>${data.sandbox ? 'In test mode no card is charged: use the buttons below to try each outcome.' : 'Complete the payment with the payment provider; this page updates by itself.'}</p>`
  const off = data.final ? ' disabled' : ''
  const sandbox = data.sandbox
    ? `  <section class="sandbox" aria-labelledby="sandbox-heading"${hide}>
    <h2 id="sandbox-heading">Test mode</h2>
    <p>No real money moves. Try an outcome:</p>
    <div class="actions">
      <button type="button" class="primary" data-simulate="paid"${off}>Simulate payment</button>
      <button type="button" class="secondary" data-simulate="failed"${off}>Simulate failure</button>
    </div>
  </section>`
    : ''
  return layout(
    `Pay ${data.merchantName}: ${data.amount}`,
    `<main class="checkout" data-status="${data.status}" data-token="${escapeHtml(data.token)}" data-expires-at="${data.expires_at}" data-redirect-url="${escapeHtml(data.redirect_url ?? '')}">
  ${data.testMode ? '<p class="badge">Test mode</p>' : ''}
  <header>
    <p class="pay-to">Payment to</p>
    <h1>${escapeHtml(data.merchantName)}</h1>
  </header>
  <section class="summary" aria-label="Payment summary">
    <p class="amount-label" id="amount-label" data-labels="${escapeHtml(JSON.stringify(AMOUNT_LABELS))}">${AMOUNT_LABELS[data.status]}</p>
    <p class="amount" aria-describedby="amount-label">${escapeHtml(data.amount)}</p>
    ${data.description ? `<p class="description">${escapeHtml(data.description)}</p>` : ''}
    <p class="countdown"${data.final ? ' hidden' : ''}>Time left: <time id="countdown" datetime="${data.expires_at}">…</time></p>
  </section>
  <div id="status" class="status status-${data.status}" role="status" aria-live="polite">${escapeHtml(data.message)}</div>
  <p id="redirect" class="redirect" hidden></p>
${requisitesSection}
${sandbox}
  <p id="announce" class="visually-hidden" aria-live="polite"></p>
  <footer><p>Secure payment page · merchant-gateway</p></footer>
</main>`,
  )
}

export function renderNotFound(): string {
  return layout(
    'Payment not found',
    `<main class="checkout">
  <h1>Payment not found</h1>
  <p>This payment link is not valid. Please check the link, or ask the shop for a new one.</p>
</main>`,
  )
}
