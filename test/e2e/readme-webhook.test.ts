import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { eventually } from '../helpers/harness.ts'
import { freePort, ROOT } from '../helpers/program.ts'

/**
 * The README's webhook quick start: the one-line receiver it gives listens where the webhook it then configures
 * points, answers 200, and prints what it got.
 */

async function quickStart(): Promise<{ receiver: string; webhookUrl: string }> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const receiver = /^node -e "require\('http'\)\.createServer.*"$/m.exec(readme)?.[0]
  assert.ok(receiver, 'a one-line receiver in the README')
  const webhookUrl = /-X PUT \S+\/integration\/webhook .* -d '\{"url":"([^"]+)"\}'/.exec(readme)?.[1]
  assert.ok(webhookUrl, 'the README sets the webhook URL')
  return { receiver, webhookUrl }
}

describe("the README's webhook quick start", () => {
  it('its receiver listens on the port the webhook is pointed at, answers 200 and prints the event', async () => {
    const { receiver, webhookUrl } = await quickStart()
    const port = new URL(webhookUrl).port
    assert.ok(receiver.endsWith(`.listen(${port})"`), `the receiver listens on ${port}: ${receiver}`)

    // Run as the README gives it, on a free port rather than one the machine may be using.
    const free = await freePort()
    const line = receiver.replace(`.listen(${port})"`, `.listen(${free})"`)
    const child = spawn('bash', ['-c', line], { stdio: ['ignore', 'pipe', 'pipe'] })
    let printed = ''
    child.stdout.on('data', (chunk: Buffer) => {
      printed += chunk.toString()
    })
    try {
      const body = '{"event":"transaction.paid","event_id":"evt_readme"}'
      const answer = await eventually(
        () =>
          fetch(`http://127.0.0.1:${free}/`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'webhook-id': 'evt_readme' },
            body,
          }).catch(() => null),
        30_000,
      )
      assert.equal(answer.status, 200)
      await eventually(async () => printed.includes(`evt_readme ${body}`), 10_000)
    } finally {
      child.kill()
    }
  })
})
