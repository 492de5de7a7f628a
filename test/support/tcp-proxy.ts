import net from 'node:net';

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
   * (it reads the chunk, then the end). A COMMIT that the server carries out and whose answer is lost.
   */
  loseAnswerTo(bytes: Buffer): void;
}

export interface TcpProxyOptions {
  /** Sees every chunk a client sends, before it is passed on; `client` tells the connections apart. */
  onClientData?: (client: net.Socket, chunk: Buffer) => void;
}

export async function startTcpProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
  options: TcpProxyOptions = {},
): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let losing: Buffer | undefined;
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined); // the other side's reset, or ours
    }
    client.on('data', (chunk: Buffer) => {
      options.onClientData?.(client, chunk);
      if (losing && chunk.includes(losing)) {
        losing = undefined;
        upstream.unpipe(client);
        client.resetAndDestroy();
        upstream.end(chunk);
        return;
      }
      upstream.write(chunk);
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
  const port = await listen(0);
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of open) socket.resetAndDestroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  return {
    port,
    cut: stop,
    restore: async () => {
      await listen(port);
    },
    close: stop,
    loseAnswerTo: (bytes) => {
      losing = bytes;
    },
  };
}
