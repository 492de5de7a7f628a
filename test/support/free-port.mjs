// A port for a server that a test starts later, shared by the global setup and the suites (plain ESM, so the
// global setup, which runs outside Jest's module system, can import it too).
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** The kernel's range of ephemeral ports: where connect() takes its local ports (Linux; else IANA's). */
function ephemeralRange() {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    return [Number(low), Number(high)];
  } catch {
    return [49152, 65535];
  }
}

/** True when a server can listen on `port` on every address now (as the API does). */
function bindable(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

const handedOut = new Set();

/**
 * A port nobody listens on now, drawn below the ephemeral range. A port from listen(0) is inside that range,
 * where every outgoing connection of the machine takes its local port: in the seconds before a spawned API
 * or redis-server binds it, a connection of the suite running beside (pools, HTTP clients: thousands) may
 * take it, and the server fails with EADDRINUSE. Below the range, only a listener can take it.
 */
export async function freePort() {
  const [low] = ephemeralRange();
  const from = Math.max(10_000, low - 16_000);
  for (let tries = 0; from < low && tries < 200; tries++) {
    const port = randomInt(from, low);
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port below the ephemeral range (${low})`);
}
