import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link } from 'react-router'
import { data, noContent } from '../api/client'
import { type DashboardSchemas, dashboardApi, inMode, type Role } from '../api/dashboard'
import { AUDIT_ACTION_VALUES, ROLE_VALUES } from '../api/values'
import {
  ACTIONS,
  Details,
  ErrorNote,
  FilterDates,
  FilterSelect,
  Filters,
  MutationForm,
  num,
  Pager,
  ref,
  STATUS,
  Table,
  useExport,
  useListFilters,
} from '../components'
import { money, when, words } from '../format'
import { useMode } from '../layout'
import { useCan, useMe } from '../session'

/** People of the merchant: invite, change role, disable (owner and admin; the server checks it too). */
export function People() {
  const me = useMe()
  const canManage = useCan('manage_users')
  const queryClient = useQueryClient()
  const users = useQuery({
    queryKey: ['users'],
    queryFn: () => data(dashboardApi.GET('/dashboard/api/users')),
    enabled: canManage,
  })
  const invite = useMutation({
    mutationFn: (body: { email: string; role: Role }) =>
      data(dashboardApi.POST('/dashboard/api/users/invitations', { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['users'] }),
  })
  const changeRole = useMutation({
    mutationFn: ({ uuid, role }: { uuid: string; role: Role }) =>
      data(dashboardApi.PATCH('/dashboard/api/users/{uuid}', { params: { path: { uuid } }, body: { role } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['users'] }),
  })
  const disable = useMutation({
    mutationFn: (uuid: string) =>
      data(dashboardApi.POST('/dashboard/api/users/{uuid}/disable', { params: { path: { uuid } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['users'] }),
  })
  if (!canManage) return <p>Only an owner or an admin manages people.</p>

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    invite.mutate({ email: String(form.get('email')), role: String(form.get('role')) as Role })
  }

  return (
    <>
      <h1>People</h1>
      <section className="card" aria-labelledby="invite-title">
        <h2 id="invite-title">Invite someone</h2>
        <MutationForm mutation={invite} submit="Invite" onSubmit={submit}>
          <label>
            Email
            <input name="email" type="email" required />
          </label>
          <label>
            Role
            <select name="role" defaultValue="viewer">
              {ROLE_VALUES.map((r) => (
                <option key={r}>{r}</option>
              ))}
            </select>
          </label>
        </MutationForm>
        {invite.data && (
          <div role="status" className="ok">
            <p>
              Invited {invite.data.user.email} as {invite.data.user.role}. Send them this link; it works once,
              until {when(invite.data.expires_at)}, and is shown only now:
            </p>
            <input
              className="mono wide"
              readOnly
              value={invite.data.invite_url}
              aria-label="Invitation link"
              onFocus={(e) => e.currentTarget.select()}
            />
          </div>
        )}
      </section>
      <ErrorNote error={users.error ?? disable.error ?? changeRole.error} />
      <Table
        name="People"
        head={[ref('Email'), 'Role', STATUS, 'Two-factor', 'Since', ACTIONS]}
        rows={users.data?.data}
        row={(u) => (
          <tr key={u.uuid}>
            <td>{u.email}</td>
            <td>
              {u.uuid === me.user.uuid || u.status !== 'active' ? (
                u.role
              ) : (
                <select
                  aria-label={`Role of ${u.email}`}
                  value={u.role}
                  onChange={(e) => changeRole.mutate({ uuid: u.uuid, role: e.target.value as Role })}
                >
                  {ROLE_VALUES.map((r) => (
                    <option key={r}>{r}</option>
                  ))}
                </select>
              )}
            </td>
            <td>{u.password_set ? u.status : 'invited'}</td>
            <td>{u.totp_enabled ? 'on' : 'off'}</td>
            <td>{when(u.created_at)}</td>
            <td>
              {u.status === 'active' && u.uuid !== me.user.uuid && (
                <button
                  type="button"
                  className="secondary"
                  aria-label={`Disable ${u.email}`}
                  onClick={() => {
                    if (window.confirm(`Disable ${u.email}? Their sessions end now.`)) disable.mutate(u.uuid)
                  }}
                >
                  Disable
                </button>
              )}
            </td>
          </tr>
        )}
      />
    </>
  )
}

/** The audit log's filters, in the page's address: the person, the action, the days. */
const AUDIT_FILTERS = ['actor_user_uuid', 'action', 'from', 'to'] as const

/**
 * What happened in the dashboard: who, what, when, on what (linked to where it is shown), from where (owner and
 * admin); filtered by person, action and date, and exportable as CSV.
 */
export function AuditLog() {
  const mode = useMode()
  const canRead = useCan('read_audit_log')
  const canListPeople = useCan('manage_users')
  const { query, cursor, apply } = useListFilters(AUDIT_FILTERS)
  const people = useQuery({
    queryKey: ['users'],
    queryFn: () => data(dashboardApi.GET('/dashboard/api/users')),
    enabled: canListPeople,
  })
  const log = useQuery({
    queryKey: ['audit', query, cursor],
    queryFn: () =>
      data(
        dashboardApi.GET('/dashboard/api/audit-log', {
          params: { query: { ...query, per_page: 50, cursor } },
        }),
      ),
    enabled: canRead,
    placeholderData: keepPreviousData,
  })
  const csv = useExport('/dashboard/api/audit-log', 'audit-log', query)
  if (!canRead) return <p>Only an owner or an admin reads the audit log.</p>
  const emails = new Map(people.data?.data.map((u) => [u.uuid, u.email]))
  return (
    <>
      <h1>Audit log</h1>
      <Filters label="Filter the audit log" onSubmit={apply} csv={csv}>
        <FilterSelect
          label="Person"
          name="actor_user_uuid"
          values={[...emails.keys()]}
          text={(uuid) => emails.get(uuid) ?? uuid}
        />
        <FilterSelect label="Action" name="action" values={AUDIT_ACTION_VALUES} text={words} />
        <FilterDates from="from" to="to" />
      </Filters>
      <ErrorNote error={log.error ?? csv.error} />
      <Table
        name="Audit log"
        head={['When', 'Who', ref('Action'), 'On', 'Mode', 'From']}
        rows={log.data?.data}
        row={(row) => (
          <tr key={row.uuid}>
            <td>{when(row.at)}</td>
            <td>{row.actor_email ?? (row.via === 'cli' ? 'operator (command line)' : '—')}</td>
            <td>
              {words(row.action)}
              {typeof row.details?.operation === 'string' ? `: ${row.details.operation}` : ''}
            </td>
            <td className="mono nowrap">
              {row.target_path ? (
                <Link to={`/${row.mode ?? mode}${row.target_path}`}>
                  {row.target_kind ? `${words(row.target_kind)} ` : ''}
                  {row.target_id}
                </Link>
              ) : (
                (row.target_id ?? '')
              )}
            </td>
            <td>{row.mode ?? ''}</td>
            <td>{row.ip ?? ''}</td>
          </tr>
        )}
        empty="Nothing matches."
      />
      {log.data && <Pager meta={{ prev_cursor: cursor ? '' : null, next_cursor: log.data.next_cursor }} />}
    </>
  )
}

/** Sign-out everywhere, the optional second factor (TOTP), and the owner's requirement of it. */
export function Security() {
  const me = useMe()
  const queryClient = useQueryClient()
  const canRequire = useCan('manage_security')
  const requirement = useQuery({
    queryKey: ['merchant-security'],
    queryFn: () => data(dashboardApi.GET('/dashboard/api/merchant/security')),
    enabled: !me.totp_enrolment_required,
  })
  const setRequirement = useMutation({
    mutationFn: (require_totp: boolean) =>
      data(dashboardApi.PUT('/dashboard/api/merchant/security', { body: { require_totp } })),
    onSuccess: (answer) => queryClient.setQueryData(['merchant-security'], answer),
  })
  const [enrolment, setEnrolment] = useState<DashboardSchemas['TotpEnrolment'] | null>(null)
  const [message, setMessage] = useState<string | null>(null)
  const start = useMutation({
    mutationFn: () => data(dashboardApi.POST('/dashboard/api/me/totp')),
    onSuccess: setEnrolment,
  })
  const confirm = useMutation({
    mutationFn: (code: string) =>
      data(dashboardApi.POST('/dashboard/api/me/totp/confirm', { body: { code } })),
    onSuccess: () => {
      setEnrolment(null)
      setMessage('Two-factor sign-in is on.')
      queryClient.invalidateQueries({ queryKey: ['me'] })
    },
  })
  const everywhere = useMutation({
    mutationFn: () => noContent(dashboardApi.DELETE('/dashboard/api/sessions')),
    onSuccess: () => window.location.assign('/dashboard/sign-in'),
  })
  return (
    <>
      <h1>Security</h1>
      <section className="card" aria-labelledby="totp-title">
        <h2 id="totp-title">Two-factor sign-in</h2>
        {message && <p role="status">{message}</p>}
        {!enrolment && (
          <button type="button" onClick={() => start.mutate()}>
            Set up an authenticator app
          </button>
        )}
        <ErrorNote error={start.error ?? confirm.error} />
        {enrolment && (
          <form
            className="form"
            onSubmit={(e) => {
              e.preventDefault()
              confirm.mutate(String(new FormData(e.currentTarget).get('code')))
            }}
          >
            <p>
              Add this key to your authenticator app (or open{' '}
              <a href={enrolment.otpauth_uri}>the otpauth link</a> on your phone), then enter the code it
              shows.
            </p>
            <p className="mono">{enrolment.secret}</p>
            <label>
              Code
              <input
                name="code"
                inputMode="numeric"
                autoComplete="one-time-code"
                pattern="[0-9]{6}"
                required
              />
            </label>
            <button type="submit">Turn on</button>
          </form>
        )}
      </section>
      {canRequire && requirement.data && (
        <section className="card" aria-labelledby="require-title">
          <h2 id="require-title">Require two-factor sign-in</h2>
          <p>
            {requirement.data.require_totp
              ? 'Everyone at your merchant must use an authenticator app to sign in.'
              : 'Two-factor sign-in is optional for your people.'}
          </p>
          <ErrorNote error={setRequirement.error} />
          <button
            type="button"
            className="secondary"
            onClick={() => setRequirement.mutate(!requirement.data.require_totp)}
          >
            {requirement.data.require_totp ? 'Make it optional' : 'Require it for everyone'}
          </button>
        </section>
      )}
      <section className="card" aria-labelledby="sessions-title">
        <h2 id="sessions-title">Sessions</h2>
        <button type="button" className="secondary" onClick={() => everywhere.mutate()}>
          Sign out on every device
        </button>
      </section>
    </>
  )
}

const percentOf = (bps: number) => `${(bps / 100).toFixed(2)} %`

/** The merchant's profile as the operator set it: read-only here. */
export function Profile() {
  const mode = useMode()
  const profile = useQuery({
    queryKey: ['merchant-profile'],
    queryFn: () => data(dashboardApi.GET('/dashboard/api/merchant', inMode(mode))),
  })
  return (
    <>
      <h1>Merchant profile</h1>
      <p>These settings are the operator's: ask them to change one.</p>
      <ErrorNote error={profile.error} />
      {profile.data && (
        <>
          <Details
            id="profile-title"
            title={profile.data.name}
            pairs={[
              ['Merchant id', profile.data.uuid, 'mono'],
              ['Settlement currency', profile.data.settlement_currency],
              ['Settlement hold (live)', `${Math.round(profile.data.settlement_hold_seconds / 3600)} h`],
              ['Payment page valid for', `${Math.round(profile.data.transaction_ttl_seconds / 60)} min`],
              ['FX markup', percentOf(profile.data.fx_markup_bps)],
              [
                'Payout fee',
                `${percentOf(profile.data.payout_fee_bps)} + ${money(profile.data.payout_fixed_fee_micro, 'USDT')}`,
              ],
            ]}
          />
          <Table
            name="Payment fees"
            head={[ref('Method'), num('Fee'), num('Paid by you')]}
            rows={profile.data.fees}
            row={(f) => (
              <tr key={f.payment_method}>
                <td>{words(f.payment_method)}</td>
                <td className="num">{percentOf(f.fee_bps)}</td>
                <td className="num">{percentOf(f.merchant_fee_share_bps)}</td>
              </tr>
            )}
          />
        </>
      )}
    </>
  )
}
