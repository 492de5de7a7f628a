import dns from 'node:dns';
import net from 'node:net';

/**
 * SSRF protection for outbound calls to addresses that customers choose
 * (webhook URLs): only public unicast addresses, checked on the address that
 * is actually connected to (so DNS rebinding cannot slip a private address in
 * after a check).
 */
const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv4');
}
for (const [prefix, bits] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed by some hosts)
  ['64:ff9b:1::', 48], // local-use IPv4/IPv6 translation
  ['2001::', 32], // Teredo (an IPv4 address hidden in the last 32 bits)
  ['ff00::', 8], // multicast
  ['2001:db8::', 32], // documentation
  ['100::', 64], // discard
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv6');
}

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted IPv4 counts as two). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, ''); // no zone index
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (part: string | undefined) =>
    part ? part.split(':').map((group) => parseInt(group, 16)) : [];
  const front = parse(head);
  const back = parse(tail);
  return tail === undefined
    ? front
    : [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/**
 * IPv4 embedded in an IPv6 address, if any: IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96, RFC
 * 2765's SIIT; decision 0096), IPv4-compatible (::/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16, the IPv4 address
 * in bits 16-47). The local-use NAT64 prefix 64:ff9b:1::/48 is refused whole, whatever it embeds.
 */
function embeddedIpv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  const quad = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  if (groups[0] === 0x2002) return quad(groups[1], groups[2]);
  const prefix = groups.slice(0, 6).join(':');
  if (
    prefix === '0:0:0:0:0:65535' ||
    prefix === '0:0:0:0:65535:0' ||
    prefix === '0:0:0:0:0:0' ||
    prefix === '100:65435:0:0:0:0'
  ) {
    return quad(groups[6], groups[7]);
  }
  return undefined;
}

export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 4) return !blocked.check(address, 'ipv4');
  const v4 = embeddedIpv4(address);
  if (v4) return !blocked.check(v4, 'ipv4');
  return !blocked.check(address, 'ipv6');
}

export class PrivateAddressError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to a non-public address (${address})`);
    this.name = 'PrivateAddressError';
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request/agents that refuses non-public addresses.
 * With `allowPrivate` it is plain dns.lookup.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const list = addresses as dns.LookupAddress[];
      if (!allowPrivate) {
        const bad = list.find((entry) => !isPublicAddress(entry.address));
        if (bad) return callback(new PrivateAddressError(hostname, bad.address) as NodeJS.ErrnoException, '');
      }
      if (options.all) return callback(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}

/** Resolves a URL's host and refuses non-public addresses (registration-time check). */
export async function assertPublicHost(url: URL, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = net.isIP(host) ? [{ address: host }] : await dns.promises.lookup(host, { all: true });
  const bad = addresses.find((entry) => !isPublicAddress(entry.address));
  if (bad) throw new PrivateAddressError(host, bad.address);
}
