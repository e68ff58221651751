/**
 * Type-checked, never run: the SDK's types must refuse what the service refuses. `npx tsc --noEmit` checks this
 * file against sdk/src, and test/sdk/install.test.ts against the packed SDK's declarations: an
 * `@ts-expect-error` whose line compiles fails both.
 */
import { type List, MerchantGateway, type Refund, webhooks } from '../../sdk/src/index.ts'

const mg = new MerchantGateway({ apiKey: 'sk_test_…' })

// PUT /integration/webhook replaces the whole configuration: without `url` the service answers 422.
// @ts-expect-error url is required
void mg.webhook.update({ enabled: false })
// @ts-expect-error url is required
void mg.webhook.update({})
// Pausing the webhook sends its url along; null removes it; enabled and events have defaults.
void mg.webhook.update({ url: 'https://shop.example/webhooks', enabled: false })
void mg.webhook.update({ url: null })
void mg.webhook.update({ url: 'https://shop.example/webhooks', events: ['transaction.paid'] })

// verify() takes the raw body as received, not the object a JSON parser made of it.
// @ts-expect-error a parsed body
void (() => webhooks.verify({ event: 'transaction.paid' }, {}, 'whsec_…'))
void (() => webhooks.verify(new TextEncoder().encode('{}'), {}, 'whsec_…'))

// The options may all come from the environment.
void new MerchantGateway()

const refunds: List<Refund> = mg.refunds.list()
void refunds.toArray(500)
