import net from 'node:net';

/** A TCP proxy in front of a real server, which a test cuts (every connection reset, new ones refused) and restores. */
export interface TcpProxy {
  readonly port: number;
  /** Resets every open connection and stops listening: connects are refused until restore(). */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined); // the other side's reset, or ours
    }
    client.pipe(upstream).pipe(client);
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
  };
}
