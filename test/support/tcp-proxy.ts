import net from 'node:net';
import { freePort } from './free-port.mjs';

/** A TCP proxy in front of a real server, which a test cuts (every connection reset, new ones refused) and restores. */
export interface TcpProxy {
  readonly port: number;
  /** Resets every open connection and stops listening: connects are refused until restore(). */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
  /**
   * Arms a one-time fault: the next chunk a client sends that contains `bytes` reaches the server, then that
   * client's connection is reset before any answer comes back, and the server's side is closed after the chunk
   * (it reads the chunk, then the end). A COMMIT that the server carries out and whose answer is lost; a statement
   * that waits at the server (on a lock) goes on waiting, and commits once it may, until its backend is ended.
   */
  loseAnswerTo(bytes: Buffer): Fault;
  /**
   * Arms a one-time fault: the next chunk a client sends that contains `bytes` reaches the server; when the server's
   * answer comes back, both sides of that connection are reset and the answer is dropped. A call that the server
   * carried out to its end (for an autocommit call, its commit at Sync) and whose answer is lost.
   */
  cutAtAnswerTo(bytes: Buffer): Fault;
  /**
   * Arms a one-time fault: the next chunk a client sends that contains `bytes` never reaches the server: both sides
   * of that connection are reset instead. A call lost before it reached the server.
   */
  cutBefore(bytes: Buffer): Fault;
  /** Takes back the fault armed last if it has not happened: a test that expects it never to happen leaves none. */
  disarm(): void;
}

/** An armed fault: whether it has happened yet. */
export interface Fault {
  readonly fired: boolean;
}

export interface TcpProxyOptions {
  /** Sees every chunk a client sends, before it is passed on; `client` tells the connections apart. */
  onClientData?: (client: net.Socket, chunk: Buffer) => void;
}

type FaultKind = 'loseAnswer' | 'cutAtAnswer' | 'cutBefore';

export async function startTcpProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
  options: TcpProxyOptions = {},
): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let armed: { kind: FaultKind; bytes: Buffer; fault: { fired: boolean } } | undefined;
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined); // the other side's reset, or ours
    }
    const resetBoth = () => {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    };
    client.on('data', (chunk: Buffer) => {
      options.onClientData?.(client, chunk);
      const fault = armed && chunk.includes(armed.bytes) ? armed : undefined;
      if (!fault) {
        upstream.write(chunk);
        return;
      }
      armed = undefined;
      fault.fault.fired = true;
      if (fault.kind === 'loseAnswer') {
        upstream.unpipe(client);
        client.resetAndDestroy();
        upstream.end(chunk);
      } else if (fault.kind === 'cutAtAnswer') {
        upstream.unpipe(client);
        upstream.once('data', resetBoth);
        upstream.resume();
        upstream.write(chunk);
      } else {
        resetBoth();
      }
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  // Below the ephemeral range (not listen(0)): restore() listens on it again, and an outgoing connection of the
  // machine could have taken an ephemeral port meanwhile.
  const port = await listen(await freePort());
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of open) socket.resetAndDestroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  const arm = (kind: FaultKind, bytes: Buffer): Fault => {
    const fault = { fired: false };
    armed = { kind, bytes, fault };
    return fault;
  };
  return {
    port,
    cut: stop,
    restore: async () => {
      await listen(port);
    },
    close: stop,
    loseAnswerTo: (bytes) => arm('loseAnswer', bytes),
    cutAtAnswerTo: (bytes) => arm('cutAtAnswer', bytes),
    cutBefore: (bytes) => arm('cutBefore', bytes),
    disarm: () => {
      armed = undefined;
    },
  };
}
