/**
 * `npm run lint:openapi`: writes the served OpenAPI document and the dashboard API's to temporary files and lints
 * each with Redocly's `recommended` ruleset (redocly.yaml), offline: no telemetry, no update check. Exits
 * non-zero on any error or warning.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

interface LintReport {
  totals: { errors: number; warnings: number }
  version: string
  problems: { ruleId: string; severity: string; message: string; location: { pointer?: string }[] }[]
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dir = mkdtempSync(join(tmpdir(), 'merchant-gateway-openapi-'))
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }

/** Writes one document (`--dashboard`: the dashboard API's) and lints it; whether it has no problem at all. */
function lint(name: string, args: string[]): boolean {
  const file = join(dir, `${name}.json`)
  const print = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(root, 'scripts/openapi.ts'), ...args, file],
    { cwd: root, stdio: 'inherit', env },
  )
  if (print.status !== 0) return false
  const lint = spawnSync(
    process.execPath,
    [
      join(root, 'node_modules/@redocly/cli/bin/cli.js'),
      'lint',
      file,
      '--config',
      join(root, 'redocly.yaml'),
      '--format',
      'json',
      '--max-problems',
      '1000',
    ],
    { cwd: root, env, encoding: 'utf8' },
  )
  let report: LintReport
  try {
    report = JSON.parse(lint.stdout)
  } catch {
    process.stderr.write(
      `redocly lint did not answer JSON (exit ${lint.status}):\n${lint.stdout}${lint.stderr}`,
    )
    return false
  }
  for (const problem of report.problems)
    process.stdout.write(
      `${name}: ${problem.severity} ${problem.ruleId}: ${problem.message} (${problem.location[0]?.pointer ?? ''})\n`,
    )
  const { errors, warnings } = report.totals
  process.stdout.write(
    `${name}: Redocly ${report.version}, recommended ruleset (redocly.yaml): ${errors} error(s), ${warnings} warning(s).\n`,
  )
  // Redocly exits 0 on warnings: the house allows none.
  return errors + warnings === 0 && lint.status === 0
}

try {
  const merchant = lint('openapi', [])
  const dashboard = lint('dashboard-openapi', ['--dashboard'])
  process.exitCode = merchant && dashboard ? 0 : 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
