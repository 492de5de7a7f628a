import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Application } from 'express';

/** An Express application as created by `express()`: its request and response prototypes. */
type ExpressApplication = Application & { request: object; response: object };

/**
 * Nest's Express adapter, with one change: Node's HTTP server creates each request and response with the
 * prototypes Express gives them (`app.request`, `app.response`) instead of Node's own.
 *
 * Why (docs/decisions/0043): Express's `app.handle` calls `Object.setPrototypeOf(req, app.request)` (and the
 * same for `res`) on every request. Changing a live object's prototype gives it a hidden class of its own, and
 * V8 then kept every request's object graph (the router's closures, the body listeners, the response buffers)
 * past two young-generation collections, promoting nearly all of it to the old generation: 1.4 MB per
 * scavenge under the transfer load, a full collection every second, a quarter of the API's CPU in the
 * collector. When the object already has that prototype, the call changes nothing and the graph dies young.
 *
 * Only the plain HTTP server is built here; with options this service never sets (HTTPS, 503 while closing,
 * forced connection close), or on a Node whose request and response are classes, Nest's own server is used.
 */
export class PresetPrototypesExpressAdapter extends ExpressAdapter {
  private startClosing: () => void = () => undefined;

  override initHttpServer(options: NestApplicationOptions): void {
    this.createHttpServer(options);
    this.startClosing = closeConnectionsOnceAnswered(this.httpServer as Server);
  }

  /** The application's close begins (before its hooks and the server's close): see closeConnectionsOnceAnswered. */
  override beforeClose(): void {
    super.beforeClose();
    this.startClosing();
  }

  private createHttpServer(options: NestApplicationOptions): void {
    if (options?.httpsOptions || options?.return503OnClosing || options?.forceCloseConnections) {
      super.initHttpServer(options);
      return;
    }
    const app = this.getInstance<ExpressApplication>();
    const constructors = constructorsWithPrototypes(app.request, app.response);
    if (!constructors) {
      super.initHttpServer(options);
      return;
    }
    this.httpServer = createServer(constructors, app);
  }
}

/**
 * Keep-alive connections do not hold the stop (docs/decisions/0102). Node's `server.close()` closes the connections
 * idle at that moment only, and Nest runs the shutdown hooks (queue consumers, pools) once it has completed: a
 * connection busy with a request then got its answer with `Connection: keep-alive` and stayed open
 * HTTP_KEEP_ALIVE_TIMEOUT_MS (65 s), past the 25 s cut-off, so every stop with a request in flight (nearly every
 * deploy behind a load balancer) ended in `shutdown timed out`, exit 1. From the call of the returned function on,
 * each answer not yet begun says `Connection: close` (Node closes the connection after it), and each connection is
 * closed as soon as it is idle after its answer (one whose answer had begun when the stop came): `close()`
 * completes once the requests in flight are answered.
 *
 * Until the stop it costs nothing per request: it follows connections, not requests, and finds a connection's
 * answer in flight where Node's server keeps it (`socket._httpMessage`, as http-terminator does). A listener on
 * every request and its answer's `close`, as first written, cost the money path about a third of the API's CPU per
 * transfer, and a set of answers swept lazily about a tenth (bench/README.md, "A listener on every answer").
 */
export function closeConnectionsOnceAnswered(server: Server): () => void {
  const connections = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  let closing = false;
  const closeWhenAnswered = (response: ServerResponse): void => {
    response.once('close', () => server.closeIdleConnections());
  };
  return () => {
    if (closing) return;
    closing = true;
    // Requests that arrive on a kept-alive connection from now on: answered with Connection: close.
    server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
      response.shouldKeepAlive = false;
      closeWhenAnswered(response);
    });
    for (const socket of connections) {
      const response = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
      if (!response || response.destroyed) continue;
      if (!response.headersSent) response.shouldKeepAlive = false;
      closeWhenAnswered(response);
    }
    server.closeIdleConnections();
  };
}

/**
 * Constructors for Node's request and response that build them with the given prototypes, or undefined when this
 * Node's are classes (they are ES5 constructor functions in the Node 20 this service is measured on; a class
 * cannot be called on an object made beforehand). They call Node's constructor on the new object: `Reflect.construct` with a new target
 * would do the same for a class too, but measured 4 times slower per request than plain Express, not faster.
 */
export function constructorsWithPrototypes(
  request: object,
  response: object,
): { IncomingMessage: typeof IncomingMessage; ServerResponse: typeof ServerResponse } | undefined {
  if (isClass(IncomingMessage) || isClass(ServerResponse)) return undefined;
  if (!(request instanceof IncomingMessage) || !(response instanceof ServerResponse)) {
    throw new TypeError("the prototypes do not inherit from Node's IncomingMessage and ServerResponse");
  }
  const callable = (constructor: unknown) => constructor as (this: unknown, ...args: unknown[]) => void;
  const Request = function (this: unknown, socket: unknown) {
    callable(IncomingMessage).call(this, socket);
  };
  Request.prototype = request;
  const Response = function (this: unknown, req: unknown, options: unknown) {
    callable(ServerResponse).call(this, req, options);
  };
  Response.prototype = response;
  return {
    IncomingMessage: Request as unknown as typeof IncomingMessage,
    ServerResponse: Response as unknown as typeof ServerResponse,
  };
}

function isClass(constructor: unknown): boolean {
  return Function.prototype.toString.call(constructor).startsWith('class');
}
