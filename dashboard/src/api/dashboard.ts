import createClient from 'openapi-fetch'
import { type Mode, sessionMiddleware } from './client'
import type { components, paths } from './openapi'

/*
 * The dashboard's own API (/dashboard/api/…): sessions, people, the second factor, the audit log, API keys and
 * the figures the pages show that the merchant API does not answer. Typed from its own OpenAPI document
 * (openapi.ts is generated from it by `npm run generate:client`), called while signed in to the dashboard.
 */

export type DashboardSchemas = components['schemas']
export type Me = DashboardSchemas['Session']
export type Permission = Me['user']['permissions'][number]
export type Member = DashboardSchemas['Member']
export type Role = Member['role']

const client = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' })
client.use(sessionMiddleware())
export const dashboardApi = client

/** The options of a call of one of the views a page calls in its mode (stats, profile, a delivery's attempts). */
export const inMode = (mode: Mode) => ({ headers: { 'x-dashboard-mode': mode } })
