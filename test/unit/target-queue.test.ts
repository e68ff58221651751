import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TargetQueue } from '../../src/workers/target-queue.ts'
import { seededRandom } from '../helpers/random.ts'

interface Item {
  target: string
  n: number
}

let counter = 0
const item = (target: string): Item => ({ target, n: counter++ })

describe('TargetQueue: the dispatcher’s slots and queues per target', () => {
  it('starts up to perTargetCap items per target, queues twice as many behind them, and refuses the rest', () => {
    const queue = new TargetQueue<Item>(2)
    assert.equal(queue.maxWaiting, 4)
    assert.equal(queue.capacity, 6)
    const admissions = Array.from({ length: 8 }, () => queue.admit(item('a.example')))
    assert.deepEqual(admissions, ['start', 'start', 'wait', 'wait', 'wait', 'wait', 'full', 'full'])
    assert.equal(queue.inflight('a.example'), 2)
    assert.equal(queue.waiting('a.example'), 4)
  })

  it('counts each target on its own: a full one leaves another’s slots free', () => {
    const queue = new TargetQueue<Item>(1)
    for (let i = 0; i < 3; i++) queue.admit(item('slow.example'))
    assert.equal(queue.admit(item('slow.example')), 'full')
    assert.equal(queue.admit(item('fast.example')), 'start')
    assert.equal(queue.inflight('fast.example'), 1)
    assert.equal(queue.waiting('fast.example'), 0)
  })

  it('hands a freed slot to the item of that target that waited longest, which then holds it', () => {
    const queue = new TargetQueue<Item>(1)
    const first = item('a.example')
    const waiting = [item('a.example'), item('a.example')]
    queue.admit(first)
    for (const w of waiting) assert.equal(queue.admit(w), 'wait')
    queue.admit(item('b.example'))

    assert.equal(queue.release('a.example'), waiting[0])
    assert.equal(queue.inflight('a.example'), 1, 'the slot went straight to the waiting item')
    assert.equal(queue.waiting('a.example'), 1)
    assert.equal(queue.release('a.example'), waiting[1])
    assert.equal(queue.release('a.example'), undefined, 'none waits: the slot is free')
    assert.equal(queue.inflight('a.example'), 0)
    assert.equal(queue.admit(item('a.example')), 'start')
    assert.equal(queue.inflight('b.example'), 1, 'another target’s slot is untouched')
  })

  it('reports as saturated only the targets whose slots and queue are both full', () => {
    const queue = new TargetQueue<Item>(2)
    for (let i = 0; i < 6; i++) queue.admit(item('full.example'))
    for (let i = 0; i < 5; i++) queue.admit(item('almost.example'))
    queue.admit(item('idle.example'))
    assert.deepEqual(queue.saturated(), ['full.example'])
    // A release starts a waiting item: one place in its queue is free again.
    assert.ok(queue.release('full.example'))
    assert.deepEqual(queue.saturated(), [])
  })

  it('drops what waits at shutdown: freed slots then start nothing, and the counts go back to zero', () => {
    const queue = new TargetQueue<Item>(2)
    for (let i = 0; i < 5; i++) queue.admit(item('a.example'))
    queue.dropWaiting()
    assert.equal(queue.waiting('a.example'), 0)
    assert.equal(queue.release('a.example'), undefined)
    assert.equal(queue.release('a.example'), undefined)
    assert.equal(queue.inflight('a.example'), 0)
    assert.deepEqual(queue.saturated(), [])
  })

  it('over random admissions and releases, keeps its bounds and starts each target’s items in order', () => {
    const random = seededRandom(0x7a76e7)
    const targets = ['a.example', 'b.example', 'c.example']
    const cap = 3
    const queue = new TargetQueue<Item>(cap)
    /** Per target: the admitted items in the order they came, and in the order they started. */
    const admitted = new Map<string, Item[]>(targets.map((t) => [t, []]))
    const started = new Map<string, Item[]>(targets.map((t) => [t, []]))
    const inflight = new Map<string, number>(targets.map((t) => [t, 0]))
    const kinds = new Map<string, number>()
    for (let step = 0; step < 5000; step++) {
      const target = targets[Math.floor(random() * targets.length)] as string
      if (random() < 0.55) {
        const one = item(target)
        const before = { inflight: queue.inflight(target), waiting: queue.waiting(target) }
        const admission = queue.admit(one)
        kinds.set(admission, (kinds.get(admission) ?? 0) + 1)
        const expected = before.inflight < cap ? 'start' : before.waiting < queue.maxWaiting ? 'wait' : 'full'
        assert.equal(admission, expected, `step ${step}`)
        if (admission !== 'full') admitted.get(target)?.push(one)
        if (admission === 'start') {
          started.get(target)?.push(one)
          inflight.set(target, (inflight.get(target) ?? 0) + 1)
        }
      } else if ((inflight.get(target) ?? 0) > 0) {
        const next = queue.release(target)
        if (next) started.get(target)?.push(next)
        else inflight.set(target, (inflight.get(target) ?? 0) - 1)
      }
      for (const t of targets) {
        assert.equal(queue.inflight(t), inflight.get(t), `step ${step}: in flight to ${t}`)
        assert.ok(queue.inflight(t) <= cap, `step ${step}: ${t} over its cap`)
        assert.ok(queue.waiting(t) <= queue.maxWaiting, `step ${step}: ${t}’s queue over its bound`)
        // An item waits only while its target's slots are all taken.
        if (queue.waiting(t) > 0)
          assert.equal(queue.inflight(t), cap, `step ${step}: ${t} waits with a free slot`)
      }
    }
    assert.deepEqual([...kinds.keys()].sort(), ['full', 'start', 'wait'], 'the run reached every admission')
    for (const t of targets) {
      const all = admitted.get(t) ?? []
      const begun = started.get(t) ?? []
      assert.deepEqual(begun, all.slice(0, begun.length), `${t}: started in the order admitted`)
      assert.equal(all.length - begun.length, queue.waiting(t))
    }
  })
})
