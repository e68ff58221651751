import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { createBrowserRouter, Navigate, RouterProvider } from 'react-router'
import { ApiError } from './api/client'
import { Layout } from './layout'
import { ApiKeys } from './pages/ApiKeys'
import { BalanceSummary } from './pages/BalanceSummary'
import { Balances } from './pages/Balances'
import { Events } from './pages/Events'
import { NewPayout } from './pages/NewPayout'
import { Payment } from './pages/Payment'
import { Payments, paymentsQuery } from './pages/Payments'
import { Payout, Payouts } from './pages/Payouts'
import { Refunds } from './pages/Refunds'
import { SearchResults } from './pages/Search'
import { SetPassword } from './pages/SetPassword'
import { AuditLog, People, Profile, Security } from './pages/Settings'
import { SignIn } from './pages/SignIn'
import { Webhooks } from './pages/Webhooks'
import { meQuery, RequireSession } from './session'
import '../../src/http/assets/base.css'
import './styles.css'

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 10_000,
      // A refusal (4xx) is an answer, not a hiccup: only the rest is retried.
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
    },
  },
})

const router = createBrowserRouter(
  [
    { path: '/sign-in', element: <SignIn /> },
    { path: '/set-password', element: <SetPassword /> },
    { path: '/', element: <Navigate to="/test" replace /> },
    {
      path: '/:mode',
      // Started at once, not when the page first renders; the pages' own queries find the answer cached.
      loader: () => {
        void queryClient.prefetchQuery(meQuery)
        return null
      },
      element: (
        <RequireSession>
          <Layout />
        </RequireSession>
      ),
      children: [
        // The home page's charts (Recharts) are half the app: loaded only when the home page is opened.
        { index: true, lazy: async () => ({ Component: (await import('./pages/Home')).Home }) },
        {
          path: 'payments',
          children: [
            {
              index: true,
              loader: ({ params, request }) => {
                const mode = params.mode === 'live' ? 'live' : 'test'
                void queryClient.prefetchQuery(paymentsQuery(mode, new URL(request.url).searchParams))
                return null
              },
              element: <Payments />,
            },
            { path: ':uuid', element: <Payment /> },
          ],
        },
        { path: 'search', element: <SearchResults /> },
        { path: 'refunds', element: <Refunds /> },
        {
          path: 'balances',
          children: [
            { index: true, element: <Balances /> },
            { path: 'summary', element: <BalanceSummary /> },
          ],
        },
        {
          path: 'payouts',
          children: [
            { index: true, element: <Payouts /> },
            { path: 'new', element: <NewPayout /> },
            { path: ':uuid', element: <Payout /> },
          ],
        },
        {
          path: 'developers',
          children: [
            { path: 'events', element: <Events /> },
            { path: 'webhooks', element: <Webhooks /> },
            { path: 'api-keys', element: <ApiKeys /> },
          ],
        },
        {
          path: 'settings',
          children: [
            { path: 'people', element: <People /> },
            { path: 'audit-log', element: <AuditLog /> },
            { path: 'security', element: <Security /> },
            { path: 'profile', element: <Profile /> },
          ],
        },
      ],
    },
    { path: '*', element: <Navigate to="/test" replace /> },
  ],
  { basename: '/dashboard' },
)

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
)
