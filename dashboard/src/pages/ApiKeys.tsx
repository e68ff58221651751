import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { data } from '../api/client'
import { type DashboardSchemas, dashboardApi } from '../api/dashboard'
import { ACTIONS, CopyButton, ErrorNote, MutationForm, ref, Scroll, STATUS, Table } from '../components'
import { when } from '../format'
import { useMode } from '../layout'

const SIGNING_EXAMPLE = `// Node.js 20: sign a request for X-Signature (docs/API.md, "Signing")
import { createHmac } from 'node:crypto'

const keyId = process.env.MG_KEY_ID      // mk_test_…
const secret = process.env.MG_SECRET     // sk_test_…
const t = Math.floor(Date.now() / 1000)
const body = JSON.stringify({ transaction_uuid: '…', amount_minor: 1000 })
const idempotencyKey = crypto.randomUUID()
const v1 = createHmac('sha256', secret)
  .update(\`\${t}.POST./integration/refunds.\${idempotencyKey}.\${body}\`)
  .digest('hex')

await fetch('https://gateway.example/integration/refunds', {
  method: 'POST',
  headers: {
    'content-type': 'application/json',
    'idempotency-key': idempotencyKey,
    'x-signature': \`key_id=\${keyId},t=\${t},v1=\${v1}\`,
  },
  body,
})`

/** Developers → API keys: the merchant's keys, a new key (its secret shown once), revoking one. */
export function ApiKeys() {
  const mode = useMode()
  const queryClient = useQueryClient()
  const [created, setCreated] = useState<DashboardSchemas['CreatedApiKey'] | null>(null)
  const keys = useQuery({
    queryKey: ['keys'],
    queryFn: () => data(dashboardApi.GET('/dashboard/api/keys')),
  })
  const create = useMutation({
    mutationFn: (name: string) =>
      data(dashboardApi.POST('/dashboard/api/keys', { body: name ? { mode, name } : { mode } })),
    onSuccess: (key) => {
      setCreated(key)
      queryClient.invalidateQueries({ queryKey: ['keys'] })
    },
  })
  const revoke = useMutation({
    mutationFn: (keyId: string) =>
      data(dashboardApi.DELETE('/dashboard/api/keys/{key_id}', { params: { path: { key_id: keyId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['keys'] }),
  })
  return (
    <>
      <h1>API keys</h1>
      <section className="card" aria-labelledby="new-key-title">
        <h2 id="new-key-title">New {mode} key</h2>
        <MutationForm
          mutation={create}
          submit={`Create a ${mode} key`}
          onSubmit={(event) => {
            event.preventDefault()
            create.mutate(String(new FormData(event.currentTarget).get('name') ?? '').trim())
          }}
        >
          <label>
            Name (optional)
            <input name="name" maxLength={100} placeholder="Checkout server" />
          </label>
        </MutationForm>
        {created && (
          <div role="status" className="ok">
            <p>
              Key <span className="mono">{created.key_id}</span>
              {created.name ? ` (${created.name})` : ''}. Its secret, shown only now: keep it in your secrets
              store.
            </p>
            <input
              className="mono wide"
              readOnly
              value={created.secret}
              aria-label="New key's secret"
              onFocus={(e) => e.currentTarget.select()}
            />
            <CopyButton key={created.secret} text={created.secret} label="Copy the secret" />
          </div>
        )}
      </section>
      <ErrorNote error={keys.error ?? revoke.error} />
      <Table
        name="API keys"
        head={[ref('Name'), 'Key id', 'Mode', 'Secret ends', 'Created', 'Last used', STATUS, ACTIONS]}
        rows={keys.data?.data}
        row={(k) => (
          <tr key={k.key_id}>
            <td>{k.name ?? <span className="muted">no name</span>}</td>
            <td className="mono nowrap">{k.key_id}</td>
            <td>{k.mode}</td>
            <td className="mono">…{k.secret_last4}</td>
            <td>{when(k.created_at)}</td>
            <td>{k.last_used_at ? when(k.last_used_at) : 'never'}</td>
            <td>{k.revoked_at ? `revoked ${when(k.revoked_at)}` : 'active'}</td>
            <td>
              {!k.revoked_at && (
                <button
                  type="button"
                  className="secondary"
                  aria-label={`Revoke ${k.key_id}`}
                  onClick={() => {
                    if (window.confirm(`Revoke ${k.key_id}? Requests with it fail from now on.`))
                      revoke.mutate(k.key_id)
                  }}
                >
                  Revoke
                </button>
              )}
            </td>
          </tr>
        )}
      />
      <section className="card spaced" aria-labelledby="signing-title">
        <h2 id="signing-title">Signing requests</h2>
        <p>
          Reads need only <span className="mono">X-Api-Key</span>. Operations that move money (refunds,
          payouts) must be signed with <span className="mono">X-Signature</span>: an HMAC-SHA256 with the
          key's secret of the time, the method, the path, the Idempotency-Key and the body.
        </p>
        <Scroll label="Signing example, scrollable" className="payload">
          <pre>{SIGNING_EXAMPLE}</pre>
        </Scroll>
        <button
          type="button"
          className="secondary"
          onClick={() => navigator.clipboard.writeText(SIGNING_EXAMPLE)}
        >
          Copy the example
        </button>
      </section>
    </>
  )
}
