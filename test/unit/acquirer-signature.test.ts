import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import {
  isCallbackSecret,
  newCallbackSecret,
  signCallback,
  verifyCallback,
} from '../../src/connectors/http-acquirer/signature.ts'

const body = JSON.stringify({ type: 'payment.succeeded', payment: { reference: 'acq_1', amount: 150000 } })

describe('acquirer callback signatures', () => {
  const current = newCallbackSecret()
  const previous = newCallbackSecret()

  it('makes secrets a Standard Webhooks library takes, and tells them from ones it cannot use', () => {
    assert.notEqual(current, previous)
    assert.ok(isCallbackSecret(current))
    assert.doesNotThrow(() => new Webhook(current))
    for (const bad of [
      '',
      'whsec_',
      'secret',
      'whsec_not base64!',
      `whsec_${Buffer.alloc(8).toString('base64')}`,
    ])
      assert.equal(isCallbackSecret(bad), false, bad)
  })

  it('verifies with any accepted secret, as during a rotation, and a Standard Webhooks verifier agrees', () => {
    const headers = signCallback([previous], 'evt_1', new Date(), body)
    assert.deepEqual(verifyCallback(body, headers, [current, previous]), { ok: true })
    assert.doesNotThrow(() => new Webhook(previous).verify(body, headers))
    // A body that is not JSON verifies too (reading it is the receiver's next step).
    const text = 'status=paid'
    assert.deepEqual(verifyCallback(text, signCallback([current], 'evt_t', new Date(), text), [current]), {
      ok: true,
    })
    // A provider signing with both during its own switch is accepted by either.
    const both = signCallback([current, previous], 'evt_2', new Date(), body)
    assert.deepEqual(verifyCallback(body, both, [current]), { ok: true })
    assert.deepEqual(verifyCallback(body, both, [previous]), { ok: true })
  })

  it('refuses another secret, a changed body or id, a stale or future time, and missing headers, saying which', () => {
    const at = new Date()
    const headers = signCallback([current], 'evt_3', at, body)
    const stranger = newCallbackSecret()
    assert.deepEqual(verifyCallback(body, headers, [stranger]), { ok: false, reason: 'mismatch' })
    assert.deepEqual(verifyCallback(body, headers, []), { ok: false, reason: 'mismatch' })
    assert.deepEqual(verifyCallback(body.replace('150000', '150001'), headers, [current]), {
      ok: false,
      reason: 'mismatch',
    })
    assert.deepEqual(verifyCallback(body, { ...headers, 'webhook-id': 'evt_4' }, [current]), {
      ok: false,
      reason: 'mismatch',
    })
    // Past the 5 minutes' tolerance by two seconds: timestamps are whole seconds, and the verifier's clock may
    // have passed a second's boundary since the signing.
    for (const offset of [-302_000, 302_000]) {
      const shifted = new Date(at.getTime() + offset)
      assert.deepEqual(verifyCallback(body, signCallback([current], 'evt_5', shifted, body), [current]), {
        ok: false,
        reason: 'stale',
      })
    }
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
      assert.deepEqual(verifyCallback(body, { ...headers, [name]: undefined }, [current]), {
        ok: false,
        reason: 'unsigned',
      })
    assert.deepEqual(verifyCallback(body, { ...headers, 'webhook-timestamp': 'soon' }, [current]), {
      ok: false,
      reason: 'unsigned',
    })
    // A header repeated is read once, the first.
    assert.deepEqual(
      verifyCallback(
        body,
        { ...headers, 'webhook-signature': [headers['webhook-signature'] as string, 'v1,x'] },
        [current],
      ),
      { ok: true },
    )
  })
})
