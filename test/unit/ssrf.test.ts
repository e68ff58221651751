import assert from 'node:assert/strict'
import type { LookupAddress } from 'node:dns'
import { describe, it } from 'node:test'
import {
  assertSafeUrl,
  guardedLookup,
  isPublicAddress,
  resolvePublic,
  UnsafeTargetError,
} from '../../src/modules/webhooks/ssrf.ts'

describe('isPublicAddress', () => {
  it('accepts globally routable unicast addresses', () => {
    for (const ip of [
      '8.8.8.8',
      '1.1.1.1',
      '93.184.216.34',
      // The neighbours of the private ranges are public.
      '9.255.255.255',
      '11.0.0.1',
      '172.15.255.255',
      '172.32.0.1',
      '192.167.255.255',
      '192.169.0.1',
      '100.63.255.255',
      '100.128.0.1',
      '169.253.255.255',
      '2606:4700::1111',
      '2001:4860:4860::8888',
      '2a00:1450:4001:82a::200e',
      '::ffff:8.8.8.8',
    ])
      assert.equal(isPublicAddress(ip), true, ip)
  })

  const blocked: Record<string, string[]> = {
    'loopback (127/8, ::1)': ['127.0.0.1', '127.0.0.2', '127.255.255.254', '::1'],
    'unspecified and "this network" (0/8, ::)': ['0.0.0.0', '0.1.2.3', '::'],
    'RFC 1918 private': [
      '10.0.0.1',
      '10.255.255.255',
      '172.16.0.1',
      '172.20.10.5',
      '172.31.255.255',
      '192.168.0.1',
      '192.168.1.1',
      '192.168.255.255',
    ],
    'link-local and cloud metadata (169.254/16, fe80::/10)': [
      '169.254.169.254',
      '169.254.0.1',
      '169.254.255.255',
      'fe80::1',
      'febf::1',
    ],
    'carrier-grade NAT (100.64/10)': ['100.64.0.1', '100.100.100.200', '100.127.255.255'],
    'unique-local (fc00::/7)': ['fd00::1', 'fc00::1', 'fdff:ffff::1'],
    'multicast and broadcast': ['224.0.0.1', '239.255.255.250', '255.255.255.255', 'ff02::1', 'ff05::2'],
    'reserved, documentation and benchmarking': [
      '192.0.0.1',
      '192.0.2.1',
      '198.18.0.1',
      '198.51.100.1',
      '203.0.113.1',
      '240.0.0.1',
      '2001:db8::1',
      '100::1',
    ],
    'IPv4-mapped IPv6 of a private address': [
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:192.168.1.1',
      '::ffff:169.254.169.254',
    ],
    'IPv4-compatible IPv6 (::/96, deprecated)': ['::7f00:1', '::a00:1', '::808:808'],
    'IPv6 ranges that embed IPv4 (NAT64, 6to4, Teredo)': [
      '64:ff9b::7f00:1',
      '64:ff9b:1::1',
      '2002:7f00:1::',
      '2001::1',
    ],
    'not an address at all': [
      '',
      'localhost',
      'example.com',
      '0x7f.0.0.1',
      '127.1',
      '2130706433',
      '1.2.3.4.5',
    ],
  }
  for (const [range, ips] of Object.entries(blocked)) {
    it(`refuses ${range}`, () => {
      for (const ip of ips) assert.equal(isPublicAddress(ip), false, ip)
    })
  }
})

describe('resolvePublic', () => {
  it('returns a public literal address as is, without asking DNS', async () => {
    assert.deepEqual(await resolvePublic('8.8.8.8'), [{ address: '8.8.8.8', family: 4 }])
    assert.deepEqual(await resolvePublic('2606:4700::1111'), [{ address: '2606:4700::1111', family: 6 }])
  })

  it('refuses a private literal address', async () => {
    for (const ip of ['127.0.0.1', '10.0.0.1', '::1', 'fd00::1', '::ffff:127.0.0.1'])
      await assert.rejects(resolvePublic(ip), (error: Error) => {
        assert.ok(error instanceof UnsafeTargetError, ip)
        assert.match(error.message, /non-public address/)
        return true
      })
  })

  it('refuses a hostname that resolves to loopback, naming the address', async () => {
    await assert.rejects(resolvePublic('localhost'), (error: Error) => {
      assert.ok(error instanceof UnsafeTargetError, error.message)
      assert.match(error.message, /host localhost resolves to a non-public address \((127\.0\.0\.1|::1)\)/)
      return true
    })
  })

  it('refuses a hostname that does not resolve', async () => {
    await assert.rejects(resolvePublic('no-such-host.invalid'), /does not resolve/)
  })
})

describe('guardedLookup (the HTTP client connect hook)', () => {
  const lookup = (host: string, all: boolean) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>(
      (resolve) =>
        guardedLookup(host, { all }, (error, address, family) => resolve({ error, address, family })),
    )

  it('hands over the checked public address, alone or as a list', async () => {
    assert.deepEqual(await lookup('8.8.8.8', false), { error: null, address: '8.8.8.8', family: 4 })
    assert.deepEqual(await lookup('8.8.8.8', true), {
      error: null,
      address: [{ address: '8.8.8.8', family: 4 }],
      family: undefined,
    })
  })

  it('fails the connection with EUNSAFETARGET for a name resolving to loopback', async () => {
    for (const all of [false, true]) {
      const { error, address } = await lookup('localhost', all)
      assert.ok(error instanceof UnsafeTargetError, String(error))
      assert.equal((error as NodeJS.ErrnoException).code, 'EUNSAFETARGET')
      assert.deepEqual(address, all ? [] : '')
    }
  })

  it('fails for private literals, bracketed IPv6 included', async () => {
    for (const host of ['127.0.0.1', '[::1]', '[fd00::1]', '[::ffff:127.0.0.1]', '169.254.169.254']) {
      const { error } = await lookup(host, false)
      assert.equal(error?.code, 'EUNSAFETARGET', host)
    }
  })
})

describe('assertSafeUrl', () => {
  const development = { requireHttps: false, allowPrivateNetworks: true }
  const production = { requireHttps: true, allowPrivateNetworks: false }
  const refused = (url: string, policy: typeof development, message: RegExp) =>
    assert.rejects(assertSafeUrl(url, policy), (error: Error) => {
      assert.ok(error instanceof UnsafeTargetError, url)
      assert.match(error.message, message, url)
      return true
    })

  it('in development allows http and private targets', async () => {
    await assertSafeUrl('http://127.0.0.1:8080/hooks', development)
    await assertSafeUrl('http://localhost/hooks', development)
    await assertSafeUrl('https://[::1]/hooks', development)
  })

  it('refuses other schemes and credentials whatever the policy', async () => {
    for (const policy of [development, production]) {
      await refused('ftp://8.8.8.8/hooks', policy, /must use/)
      await refused('file:///etc/passwd', policy, /must use/)
      await refused('https://user:pass@8.8.8.8/hooks', policy, /credentials/)
      await refused('not a url', policy, /absolute URL/)
    }
  })

  it('in production requires https, and a public target', async () => {
    await refused('http://8.8.8.8/hooks', production, /must use https/)
    await assertSafeUrl('https://8.8.8.8/hooks', production)
    await assertSafeUrl('https://[2606:4700::1111]/hooks', production)
    await refused('https://127.0.0.1/hooks', production, /non-public/)
    await refused('https://localhost/hooks', production, /non-public/)
    await refused('https://[::ffff:127.0.0.1]/hooks', production, /non-public/)
  })

  it('judges the normalized host: other spellings of 127.0.0.1 are refused too', async () => {
    const policy = { requireHttps: false, allowPrivateNetworks: false }
    for (const url of [
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0x7f.1/',
      'http://127.1/',
      'http://0177.0.0.1/',
    ])
      await refused(url, policy, /non-public address \(127\.0\.0\.1\)/)
  })
})
