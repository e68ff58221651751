import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import { ROOT } from './program.ts'

/** Debian's Chromium, which .ci/run installs. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/**
 * Headless, and quiet on a machine with no network: without the background-networking flags Chromium keeps
 * trying to reach Google's hosts, and each refused connection is noise in the page's timings.
 */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
]

/** Where the browser suites keep their screenshots (a test artifact, not committed). */
export const SHOTS = join(ROOT, 'test-artifacts', 'screenshots')

/** Chromium, driven by playwright-core; fails with a clear message when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`)
  mkdirSync(SHOTS, { recursive: true })
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS })
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe-core in the page: no serious or critical violation (the others are named in the message). */
export async function assertAccessible(page: Page, name = page.url()): Promise<void> {
  const violations = (await page.evaluate(`${axeSource}
    ;axe.run(document, { resultTypes: ['violations'] }).then((r) =>
      r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 3) })))`)) as {
    id: string
    impact: string
  }[]
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  assert.deepEqual(bad, [], `axe on ${name}: ${JSON.stringify(violations)}`)
}
