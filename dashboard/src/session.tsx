import { useQuery, useQueryClient } from '@tanstack/react-query'
import { createContext, type ReactNode, useContext } from 'react'
import { Navigate, useLocation } from 'react-router'
import { ApiError, data, noContent, setCsrfToken } from './api/client'
import { dashboardApi, type Me, type Permission } from './api/dashboard'

const SessionContext = createContext<Me | null>(null)

/** The signed-in user; only under <RequireSession>. */
export function useMe(): Me {
  const me = useContext(SessionContext)
  if (!me) throw new Error('useMe outside a session')
  return me
}

export const useCan = (permission: Permission) => useMe().user.permissions.includes(permission)

export const ME_KEY = ['me']

/** Who is signed in (and the CSRF token of the session): asked once per page load, shared by every page. */
export const meQuery = {
  queryKey: ME_KEY,
  queryFn: async () => {
    const answer = await data(dashboardApi.GET('/dashboard/api/me'))
    setCsrfToken(answer.csrf_token)
    return answer
  },
  retry: false,
  staleTime: 60_000,
}

/** Asks who is signed in; sends to the sign-in page when nobody is. */
export function RequireSession({ children }: { children: ReactNode }) {
  const location = useLocation()
  const me = useQuery(meQuery)
  if (me.isPending) return <p className="loading">Loading…</p>
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401)
      return (
        <Navigate to={`/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`} replace />
      )
    return <p role="alert">The dashboard could not reach the service: {me.error.message}</p>
  }
  return <SessionContext.Provider value={me.data}>{children}</SessionContext.Provider>
}

/** Signs out and forgets every cached answer. */
export function useSignOut() {
  const queryClient = useQueryClient()
  return async (everywhere = false) => {
    await noContent(
      dashboardApi.DELETE(everywhere ? '/dashboard/api/sessions' : '/dashboard/api/session'),
    ).catch(() => undefined)
    setCsrfToken('')
    queryClient.clear()
  }
}
