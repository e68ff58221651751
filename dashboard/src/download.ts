import { apiErrorOf, type Mode, sessionHeaders } from './api/client'

/**
 * A list as CSV, the API's own streamed export (`Accept: text/csv`, the list's filters, every matching row),
 * fetched with the session and handed to the browser as a download named after the list.
 */
export async function downloadCsv(
  mode: Mode,
  path: string,
  query: Record<string, string | undefined>,
  name: string,
) {
  const params = new URLSearchParams(
    Object.entries(query).filter((e): e is [string, string] => Boolean(e[1])),
  )
  const response = await fetch(`${path}${params.size ? `?${params}` : ''}`, {
    headers: { accept: 'text/csv', ...sessionHeaders('GET', mode) },
    credentials: 'same-origin',
  })
  if (!response.ok) throw await apiErrorOf(response)
  const url = URL.createObjectURL(await response.blob())
  const link = document.createElement('a')
  link.href = url
  link.download = `${name}-${mode}-${new Date().toISOString().slice(0, 10)}.csv`
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
}
