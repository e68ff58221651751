import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import semver from 'semver'

const root = new URL('../../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')
const manifest = JSON.parse(read('package.json')) as { engines: { node: string } }
const lock = JSON.parse(read('package-lock.json')) as {
  packages: Record<string, { engines?: { node?: string } | string[] }>
}

describe('supported Node.js versions', () => {
  const supported = manifest.engines.node

  it('every locked package runs on every Node.js version the project says it supports', () => {
    const narrower: string[] = []
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === '' || !entry.engines || Array.isArray(entry.engines)) continue
      const wants = entry.engines.node
      if (wants && !semver.subset(supported, wants)) narrower.push(`${path} wants node ${wants}`)
    }
    assert.deepEqual(narrower, [], `engines.node is ${supported}`)
  })

  it('the README states the supported range', () => {
    assert.ok(read('README.md').includes(`\`${supported}\``), `README.md names ${supported}`)
  })
})
