import { EventSourceParserStream } from 'eventsource-parser/stream'
import { ConnectionError } from './errors.ts'
import { type ClientOptions, HttpClient, type Query, type RequestOptions } from './http.ts'
import type { components, operations } from './openapi.ts'
import { List, type Page } from './pagination.ts'
import type { WebhookEvent } from './webhooks.ts'

export type Schemas = components['schemas']
type Op = operations

/** The JSON body an operation takes. */
export type BodyOf<O extends keyof Op> = Op[O] extends {
  requestBody?: { content: { 'application/json': infer B } }
}
  ? B
  : never
/** The query parameters an operation takes. */
export type QueryOf<O extends keyof Op> = Op[O]['parameters'] extends { query?: infer Q }
  ? NonNullable<Q>
  : never
/** What an operation answers on success. */
export type ResultOf<O extends keyof Op> = Op[O]['responses'] extends {
  200: { content: { 'application/json': infer R } }
}
  ? R
  : Op[O]['responses'] extends { 201: { content: { 'application/json': infer R } } }
    ? R
    : Op[O]['responses'] extends { 202: { content: { 'application/json': infer R } } }
      ? R
      : never
/** A list operation's filters (the cursor is the iterator's business). */
export type FiltersOf<O extends keyof Op> = Omit<QueryOf<O>, 'cursor'>
type ItemOf<O extends keyof Op> = ResultOf<O> extends { data: (infer T)[] } ? T : never

export type Transaction = Schemas['TransactionResponse']
export type Refund = Schemas['RefundResponse']
export type Payout = Schemas['PayoutResponse']
export type PayoutQuote = Schemas['PayoutQuoteResponse']
export type Event = Schemas['Event']
export type WebhookConfig = Schemas['WebhookConfig']
export type WebhookDelivery = Schemas['WebhookDelivery']
/**
 * The whole webhook configuration, as `PUT /integration/webhook` takes it: it replaces what is set, so `url` is
 * always given (null removes it); `enabled` defaults to true and `events` to all of them.
 */
export type WebhookConfigInput = Omit<BodyOf<'updateWebhookConfig'>, 'enabled' | 'events'> &
  Partial<Pick<BodyOf<'updateWebhookConfig'>, 'enabled' | 'events'>>

/** One message of the test-mode event stream. */
export type StreamMessage =
  | { type: 'ready'; mode: 'test'; merchant_uuid: string }
  | { type: 'event'; id: string; event: string; data: WebhookEvent; body: string }

export interface StreamOptions {
  /** Only these events (default all). */
  events?: readonly string[]
  /** Resume after this event (the last `id` received), as a reconnecting client does. */
  lastEventId?: string
  /** Ends the stream. */
  signal?: AbortSignal
  /** A connection that sends nothing (not even its heartbeat) for this long is given up; default 45 000 ms. */
  idleTimeoutMs?: number
}

const path = (template: string, ...ids: string[]) => {
  let i = 0
  return template.replace(/\{[^}]+\}/g, () => encodeURIComponent(ids[i++] as string))
}

/**
 * The merchant API. Every method sends one operation of the API (docs/API.md) with the key given here; POSTs
 * are idempotent and retried safely, refunds and payouts are signed, lists page themselves.
 *
 * ```ts
 * // The key, key id and address from MERCHANT_GATEWAY_API_KEY, MERCHANT_GATEWAY_KEY_ID, MERCHANT_GATEWAY_BASE_URL
 * const mg = new MerchantGateway()
 * const tx = await mg.transactions.create({ amount: 150000, currency: 'RUB', payment_method: 'card', external_id: 'order-1' })
 * for await (const paid of mg.transactions.list({ status: 'paid' })) console.log(paid.uuid)
 * ```
 */
export class MerchantGateway {
  readonly http: HttpClient

  /** Options left out are read from the environment (`ENVIRONMENT`); those given win. */
  constructor(options: ClientOptions = {}) {
    this.http = new HttpClient(options)
  }

  private get<O extends keyof Op>(
    template: string,
    ids: string[] = [],
    query?: Query,
    options?: RequestOptions,
  ) {
    return this.http.json<ResultOf<O>>({ method: 'GET', path: path(template, ...ids), query }, options)
  }

  private post<O extends keyof Op>(
    template: string,
    ids: string[],
    body: unknown,
    options?: RequestOptions & { signed?: boolean },
  ) {
    return this.http.json<ResultOf<O>>(
      { method: 'POST', path: path(template, ...ids), body, signed: options?.signed },
      options,
    )
  }

  private list<O extends keyof Op>(template: string, filters: object | undefined, options?: RequestOptions) {
    return new List<ItemOf<O>>((cursor) =>
      this.http.json<Page<ItemOf<O>>>(
        { method: 'GET', path: template, query: { ...(filters as Query), cursor } },
        options,
      ),
    )
  }

  /** An operation that reads one resource, named by the uuid in its path. */
  private byUuid<O extends keyof Op>(template: string) {
    return (uuid: string, options?: RequestOptions) => this.get<O>(template, [uuid], undefined, options)
  }

  /** An operation with no body on one resource, named by the uuid in its path (a simulation, a redelivery). */
  private onUuid<O extends keyof Op>(template: string) {
    return (uuid: string, options?: RequestOptions) => this.post<O>(template, [uuid], undefined, options)
  }

  /** A list operation: its items, every page of them, for the filters given. */
  private lister<O extends keyof Op>(template: string) {
    return (filters?: FiltersOf<O>, options?: RequestOptions) => this.list<O>(template, filters, options)
  }

  readonly transactions = {
    /** Creates a payment: card (the hosted page's `payment_url`) or host-to-host (then `requisites`). */
    create: (body: BodyOf<'createTransaction'>, options?: RequestOptions) =>
      this.post<'createTransaction'>('/integration/transactions', [], body, options),
    get: this.byUuid<'getTransaction'>('/integration/transactions/{uuid}'),
    getByExternalId: (externalId: string, options?: RequestOptions) =>
      this.get<'getTransactionByExternalId'>(
        '/integration/transactions/by-external-id/{externalId}',
        [externalId],
        undefined,
        options,
      ),
    list: this.lister<'listTransactions'>('/integration/transactions'),
    /** Where the customer transfers to, for a host-to-host payment. */
    requisites: this.byUuid<'getTransactionRequisites'>('/integration/transactions/{uuid}/h2h'),
  }

  readonly refunds = {
    /** Refunds a paid transaction, in part or in full (signed: the client needs `keyId`). */
    create: (body: BodyOf<'createRefund'>, options?: RequestOptions) =>
      this.post<'createRefund'>('/integration/refunds', [], body, { ...options, signed: true }),
    get: this.byUuid<'getRefund'>('/integration/refunds/{uuid}'),
    list: this.lister<'listRefunds'>('/integration/refunds'),
  }

  readonly payouts = {
    /** The rate and fee a payout would have now, held for 60 s. */
    quote: (query: QueryOf<'quotePayout'>, options?: RequestOptions) =>
      this.get<'quotePayout'>('/integration/payouts/quote', [], query, options),
    /** Pays out from the USDT balance (signed: the client needs `keyId`). */
    create: (body: BodyOf<'createPayout'>, options?: RequestOptions) =>
      this.post<'createPayout'>('/integration/payouts', [], body, { ...options, signed: true }),
    get: this.byUuid<'getPayout'>('/integration/payouts/{uuid}'),
    list: this.lister<'listPayouts'>('/integration/payouts'),
  }

  readonly balances = {
    list: (options?: RequestOptions) =>
      this.get<'listBalances'>('/integration/balances', [], undefined, options),
    /**
     * Per currency over a period (`from`, `to`: dates or date-times, both inclusive, both optional): the opening
     * balance, what moved it by kind, and the closing balance.
     */
    summary: (query: QueryOf<'getBalanceSummary'> = {}, options?: RequestOptions) =>
      this.get<'getBalanceSummary'>('/integration/balances/summary', [], query, options),
  }

  readonly balanceTransactions = {
    get: this.byUuid<'getBalanceTransaction'>('/integration/balance-transactions/{uuid}'),
    list: this.lister<'listBalanceTransactions'>('/integration/balance-transactions'),
  }

  readonly rates = {
    list: (options?: RequestOptions) => this.get<'listRates'>('/integration/rates', [], undefined, options),
  }

  readonly webhook = {
    get: (options?: RequestOptions) =>
      this.get<'getWebhookConfig'>('/integration/webhook', [], undefined, options),
    /**
     * Sets the whole configuration (a PUT: what the body leaves out is reset to its default, so `url` is
     * required; to pause the webhook, send its url with `enabled: false`).
     */
    update: (body: WebhookConfigInput, options?: RequestOptions) =>
      this.http.json<ResultOf<'updateWebhookConfig'>>(
        { method: 'PUT', path: '/integration/webhook', body },
        options,
      ),
    /** A new signing secret; the old one keeps signing beside it for the overlap asked (default 24 h). */
    rotateSecret: (body: Partial<BodyOf<'rotateWebhookSecret'>> = {}, options?: RequestOptions) =>
      this.post<'rotateWebhookSecret'>('/integration/webhook/secret/rotate', [], body, options),
    /** Sends a `webhook.test` delivery to the configured URL. */
    test: (options?: RequestOptions) =>
      this.post<'sendTestWebhook'>('/integration/webhook/test', [], undefined, options),
    deliveries: {
      list: this.lister<'listWebhookDeliveries'>('/integration/webhook/deliveries'),
      get: this.byUuid<'getWebhookDelivery'>('/integration/webhook/deliveries/{uuid}'),
      redeliver: this.onUuid<'redeliverWebhook'>('/integration/webhook/deliveries/{uuid}/redeliver'),
    },
  }

  readonly events = {
    get: (eventId: string, options?: RequestOptions) =>
      this.get<'getEvent'>('/integration/events/{event_id}', [eventId], undefined, options),
    list: this.lister<'listEvents'>('/integration/events'),
    /**
     * The test mode's events as they happen (server-sent events): a `ready` message once connected, then every
     * event with the body its webhook carries. One connection: it ends when the service ends it, and the caller
     * reconnects with `lastEventId` (as `merchant-gateway listen` does). Test keys only.
     */
    stream: (options: StreamOptions = {}) => this.stream(options),
  }

  readonly sandbox = {
    transactions: {
      paid: this.onUuid<'simulateTransactionPaid'>('/integration/sandbox/transactions/{uuid}/paid'),
      failed: this.onUuid<'simulateTransactionFailed'>('/integration/sandbox/transactions/{uuid}/failed'),
      expired: this.onUuid<'simulateTransactionExpired'>('/integration/sandbox/transactions/{uuid}/expired'),
      failedThenPaid: this.onUuid<'simulateTransactionFailedThenPaid'>(
        '/integration/sandbox/transactions/{uuid}/failed-then-paid',
      ),
    },
    payouts: {
      completed: this.onUuid<'simulatePayoutCompleted'>('/integration/sandbox/payouts/{uuid}/completed'),
      failed: this.onUuid<'simulatePayoutFailed'>('/integration/sandbox/payouts/{uuid}/failed'),
    },
  }

  private async *stream(options: StreamOptions): AsyncGenerator<StreamMessage> {
    const { response } = await this.http.send(
      {
        method: 'GET',
        path: '/integration/events/stream',
        query: { type: options.events },
        headers: {
          accept: 'text/event-stream',
          ...(options.lastEventId ? { 'last-event-id': options.lastEventId } : {}),
        },
        stream: true,
      },
      { signal: options.signal, maxRetries: 0 },
    )
    const body = response.body
    if (!body) throw new ConnectionError('the event stream answered without a body')
    const idleMs = options.idleTimeoutMs ?? 45_000
    // Any bytes (the service's heartbeat comments too) prove the connection alive; silence ends it.
    let idle: NodeJS.Timeout | undefined
    let silent = false
    const decoder = new TextDecoder()
    const reader = body
      .pipeThrough(
        new TransformStream<Uint8Array, string>({
          transform(chunk, controller) {
            arm()
            controller.enqueue(decoder.decode(chunk, { stream: true }))
          },
        }),
      )
      .pipeThrough(new EventSourceParserStream())
      .getReader()
    const stop = () => {
      clearTimeout(idle)
      void reader.cancel().catch(() => {})
    }
    function arm() {
      clearTimeout(idle)
      idle = setTimeout(() => {
        silent = true
        stop()
      }, idleMs)
      // The connection keeps the process alive while it is open; the watchdog alone must not.
      idle.unref()
    }
    arm()
    options.signal?.addEventListener('abort', stop, { once: true })
    try {
      for (;;) {
        const next = await reader.read()
        if (next.done) {
          if (silent) throw new ConnectionError(`the event stream was silent for ${idleMs} ms`)
          return
        }
        const message = next.value
        if (message.event === 'ready')
          yield { type: 'ready', ...(JSON.parse(message.data) as object) } as StreamMessage
        else if (message.id)
          yield {
            type: 'event',
            id: message.id,
            event: message.event ?? 'message',
            data: JSON.parse(message.data) as WebhookEvent,
            body: message.data,
          }
      }
    } catch (error) {
      if (options.signal?.aborted) return
      throw error instanceof ConnectionError
        ? error
        : new ConnectionError(`the event stream broke: ${String(error)}`, { cause: error })
    } finally {
      clearTimeout(idle)
      options.signal?.removeEventListener('abort', stop)
      stop()
    }
  }
}
