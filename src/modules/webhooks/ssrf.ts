import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { promisify } from 'node:util'
import ipaddr from 'ipaddr.js'

const lookupAll = promisify(dnsLookup) as unknown as (
  host: string,
  options: { all: true },
) => Promise<LookupAddress[]>

/**
 * Only globally routable unicast addresses are public. Loopback, RFC 1918, link-local (169.254/16, the cloud
 * metadata range), CGNAT (100.64/10), unique-local (fc00::/7), multicast, reserved and the IPv6 ranges that
 * embed IPv4 (NAT64, 6to4, Teredo) are not. An IPv4-mapped IPv6 address is judged as the IPv4 address it maps.
 */
export function isPublicAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false
  let address = ipaddr.parse(ip)
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
    address = (address as ipaddr.IPv6).toIPv4Address()
  }
  // IPv4-compatible IPv6 (::a.b.c.d, deprecated) is not routable as such; refuse the whole ::/96.
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0))
    return false
  return address.range() === 'unicast'
}

export class UnsafeTargetError extends Error {}

const bareHost = (hostname: string) => hostname.replace(/^\[|\]$/g, '')

export interface UrlPolicy {
  /** Only https URLs (production). */
  requireHttps: boolean
  /** Loopback and private targets allowed (development). */
  allowPrivateNetworks: boolean
}

/**
 * Checks a webhook or callback URL before it is stored: scheme, and (unless private networks are allowed)
 * every address its host resolves to. Throws UnsafeTargetError with a message fit for the merchant.
 */
export async function assertSafeUrl(raw: string, policy: UrlPolicy): Promise<void> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new UnsafeTargetError('is not an absolute URL')
  }
  if (url.protocol !== 'https:' && (policy.requireHttps || url.protocol !== 'http:')) {
    throw new UnsafeTargetError(policy.requireHttps ? 'must use https' : 'must use http or https')
  }
  if (url.username || url.password) throw new UnsafeTargetError('must not carry credentials')
  if (policy.allowPrivateNetworks) return
  await resolvePublic(bareHost(url.hostname))
}

/** The addresses of `host`, all of them public; throws UnsafeTargetError otherwise. */
export async function resolvePublic(host: string): Promise<LookupAddress[]> {
  if (ipaddr.isValid(host)) {
    if (!isPublicAddress(host)) throw new UnsafeTargetError(`points to a non-public address (${host})`)
    return [{ address: host, family: host.includes(':') ? 6 : 4 }]
  }
  let addresses: LookupAddress[]
  try {
    addresses = await lookupAll(host, { all: true })
  } catch {
    throw new UnsafeTargetError(`host ${host} does not resolve`)
  }
  const blocked = addresses.find((a) => !isPublicAddress(a.address))
  if (blocked)
    throw new UnsafeTargetError(`host ${host} resolves to a non-public address (${blocked.address})`)
  return addresses
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void

/**
 * A `lookup` for the HTTP client's connect step: the address it connects to is the address that was
 * checked, so a DNS answer that changes between the check and the connection cannot reach a private host.
 */
export function guardedLookup(hostname: string, options: { all?: boolean }, callback: LookupCallback): void {
  resolvePublic(bareHost(hostname)).then(
    (addresses) => {
      if (options.all) callback(null, addresses)
      else callback(null, addresses[0]?.address ?? '', addresses[0]?.family ?? 4)
    },
    (error: Error) => callback(Object.assign(error, { code: 'EUNSAFETARGET' }), options.all ? [] : ''),
  )
}
