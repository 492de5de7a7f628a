import { isPublicAddress } from './public-address.js';

/** Which addresses a webhook may be delivered to: public unicast only, however an address is written. */
describe('isPublicAddress (SSRF guard)', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '200.45.191.35', // an Argentine address
    '2001:4860:4860::8888',
    '2800:3f0:4002:800::200e',
    '::ffff:8.8.8.8', // IPv4-mapped, public inside
    '::ffff:808:808',
    '64:ff9b::808:808', // NAT64 of 8.8.8.8
    '::ffff:0:808:808', // IPv4-translated (SIIT) 8.8.8.8
    '2002:808:808::1', // 6to4 of 8.8.8.8
  ])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it.each([
    ['0.0.0.0', 'this network'],
    ['10.1.2.3', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['172.16.0.1', 'private'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['192.0.2.1', 'documentation'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fd00::1', 'unique local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local with a zone'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['100::1', 'discard'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['64:ff9b:1::1', 'local-use translation'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, in hex'],
    ['::ffff:0:7f00:1', 'IPv4-translated (SIIT) loopback, in hex'],
    ['::ffff:0:10.0.0.1', 'IPv4-translated (SIIT) private address'],
    ['64:ff9b:1::808:808', 'local-use translation, whatever it embeds'],
    ['::FFFF:A9FE:A9FE', 'IPv4-mapped link-local, upper case'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::7f00:1', 'IPv4-compatible loopback, in hex'],
    ['64:ff9b::10.0.0.1', 'NAT64 of a private address'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of link-local, in hex'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2002:a9fe:a9fe::1', '6to4 of link-local'],
    ['0:0:0:0:0:ffff:7f00:0001', 'IPv4-mapped loopback, written out'],
    ['localhost', 'not an address'],
    ['', 'empty'],
  ])('%s is refused (%s)', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});
