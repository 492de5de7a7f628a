import type net from 'node:net';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/** The first word of the startup packets that are not a StartupMessage (SSLRequest, GSSENCRequest). */
const ENCRYPTION_REQUESTS = new Set([80877103, 80877104]);

/**
 * The SQL statements that clients send to PostgreSQL through a TCP proxy, read from the frontend messages on the
 * wire (protocol 3.0): the text of each simple Query ('Q') and of each Parse ('P') of the extended protocol, which
 * node-postgres sends once for every parameterised query it runs. What the database was asked, whoever asked it.
 */
export class PgStatementLog {
  readonly statements: string[] = [];
  private readonly connections = new WeakMap<net.Socket, { pending: Buffer; started: boolean }>();

  /** How many statements so far contain `fragment`. */
  count(fragment: string): number {
    return this.statements.filter((statement) => statement.includes(fragment)).length;
  }

  read(client: net.Socket, chunk: Buffer): void {
    let state = this.connections.get(client);
    if (!state) this.connections.set(client, (state = { pending: Buffer.alloc(0), started: false }));
    state.pending = Buffer.concat([state.pending, chunk]);
    for (;;) {
      const { pending } = state;
      // Before the StartupMessage a packet is its length and its body; after it, a type byte comes first.
      const header = state.started ? 5 : 4;
      if (pending.length < header) return;
      const length = pending.readInt32BE(header - 4); // counts itself, not the type byte
      const end = header - 4 + length;
      if (pending.length < end) return;
      const body = pending.subarray(header, end);
      if (!state.started) {
        if (ENCRYPTION_REQUESTS.has(body.readInt32BE(0))) {
          // The proxy reads only plain connections; the servers of the tests refuse encryption ('N').
        } else {
          state.started = true;
        }
      } else if (pending[0] === 0x51) {
        this.statements.push(cString(body, 0));
      } else if (pending[0] === 0x50) {
        const name = cString(body, 0);
        this.statements.push(cString(body, Buffer.byteLength(name) + 1));
      }
      state.pending = pending.subarray(end);
    }
  }
}

function cString(buffer: Buffer, start: number): string {
  return buffer.toString('utf8', start, buffer.indexOf(0, start));
}

/** A proxy in front of the test server whose statements `log` records; `url` is `databaseUrl` through it. */
export async function proxyWithStatementLog(
  databaseUrl: string,
): Promise<{ proxy: TcpProxy; url: string; log: PgStatementLog }> {
  const target = new URL(databaseUrl);
  const log = new PgStatementLog();
  const proxy = await startTcpProxy(Number(target.port), target.hostname, {
    onClientData: (client, chunk) => log.read(client, chunk),
  });
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  return { proxy, url: url.toString(), log };
}
