import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import { createLogger, logDestination } from '../../src/app.ts'

/** A stream that keeps what is written to it, as text. */
function sink() {
  let text = ''
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString()
      done()
    },
  })
  return { stream, text: () => text }
}

describe('log lines', () => {
  it('are JSON for a collector, and readable lines on a terminal unless LOG_FORMAT says otherwise', () => {
    const to = sink().stream
    assert.equal(logDestination('json', true, to), undefined)
    assert.equal(logDestination(null, false, to), undefined)
    assert.notEqual(logDestination(null, true, to), undefined)
    assert.notEqual(logDestination('pretty', false, to), undefined)
  })

  it('readable lines name the time, the level and the message, with the fields, credentials still redacted', () => {
    const out = sink()
    const logger = createLogger('info', logDestination('pretty', false, out.stream))
    logger.info(
      { res: { headers: { 'set-cookie': 'mg_session=sk_test_secretvalue' } }, merchant: 'm-1' },
      'request seen',
    )
    logger.flush()
    const text = out.text()
    assert.match(text, /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: request seen$/m)
    assert.match(text, /merchant: "m-1"/)
    assert.doesNotMatch(text, /sk_test_secretvalue/)
    assert.doesNotMatch(text, /^\{/m, 'no JSON line')
    assert.ok(!text.includes('\u001b['), 'no colour codes off a terminal')
  })
})
