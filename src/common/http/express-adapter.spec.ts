import { Agent, createServer, get, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  closeConnectionsOnceAnswered,
  constructorsWithPrototypes,
  PresetPrototypesExpressAdapter,
} from './express-adapter.js';

@Controller()
class PingController {
  @Get('ping')
  ping() {
    return { status: 'ok' };
  }
}

@Module({ controllers: [PingController] })
class PingModule {}

/** Starts the app, answers two requests, and tells whether each arrived with Express's prototypes already. */
async function serveTwice(app: INestApplication): Promise<{ preset: boolean[]; bodies: unknown[] }> {
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer() as Server;
  const express = app.getHttpAdapter().getInstance() as { request: object; response: object };
  const preset: boolean[] = [];
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    preset.push(
      Object.getPrototypeOf(request) === express.request &&
        Object.getPrototypeOf(response) === express.response,
    );
  });
  const { port } = server.address() as AddressInfo;
  const bodies: unknown[] = [];
  for (let n = 0; n < 2; n++) {
    const answer = await fetch(`http://127.0.0.1:${port}/ping`);
    expect(answer.status).toBe(200);
    bodies.push(await answer.json());
  }
  await app.close();
  return { preset, bodies };
}

describe('PresetPrototypesExpressAdapter', () => {
  it("has Node's server build requests and responses with Express's prototypes, so Express changes none", async () => {
    const app = await NestFactory.create(PingModule, new PresetPrototypesExpressAdapter(), { logger: false });
    const { preset, bodies } = await serveTwice(app);
    expect(preset).toEqual([true, true]);
    expect(bodies).toEqual([{ status: 'ok' }, { status: 'ok' }]);
  });

  it("differs from Nest's own adapter, whose requests arrive with Node's prototypes", async () => {
    const app = await NestFactory.create(PingModule, { logger: false });
    const { preset, bodies } = await serveTwice(app);
    expect(preset).toEqual([false, false]);
    expect(bodies).toEqual([{ status: 'ok' }, { status: 'ok' }]);
  });
});

describe('constructorsWithPrototypes', () => {
  it("builds Node's objects, initialised by Node's constructors, on the given prototypes", () => {
    const requestPrototype = Object.create(IncomingMessage.prototype) as object;
    const responsePrototype = Object.create(ServerResponse.prototype) as object;
    const constructors = constructorsWithPrototypes(requestPrototype, responsePrototype);
    expect(constructors).toBeDefined();
    const request = new constructors!.IncomingMessage(null as never);
    const response = new constructors!.ServerResponse(request);
    expect(Object.getPrototypeOf(request)).toBe(requestPrototype);
    expect(Object.getPrototypeOf(response)).toBe(responsePrototype);
    expect(request).toBeInstanceOf(IncomingMessage);
    expect(request.headers).toEqual({});
    expect(response.statusCode).toBe(200);
    expect(response.req).toBe(request);
  });

  it("refuses prototypes that do not inherit from Node's", () => {
    expect(() => constructorsWithPrototypes({}, Object.create(ServerResponse.prototype) as object)).toThrow(
      /do not inherit/,
    );
  });
});

/** Closes `server`: resolves with the milliseconds its close() took to complete. */
function closeTimed(server: Server): Promise<number> {
  const started = Date.now();
  return new Promise((resolve) => server.close(() => resolve(Date.now() - started)));
}

/** GET / through a keep-alive agent: the answer's Connection header and body. */
function getThrough(agent: Agent, port: number): Promise<{ connection?: string; body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/', agent }, (answer) => {
      let body = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => (body += chunk));
      answer.on('end', () => resolve({ connection: answer.headers.connection, body }));
    }).on('error', reject);
  });
}

describe('closeConnectionsOnceAnswered', () => {
  let server: Server;
  let agent: Agent;
  afterEach(async () => {
    agent?.destroy();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('adds nothing to a request or its answer before the stop: it follows connections', async () => {
    const closeListeners: number[] = [];
    server = createServer({ keepAliveTimeout: 60_000 }, (_request, response) => {
      closeListeners.push(response.listenerCount('close'));
      response.end('ok');
    });
    const requestListeners = server.listenerCount('request');
    closeConnectionsOnceAnswered(server);
    expect(server.listenerCount('request')).toBe(requestListeners);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
    for (let n = 0; n < 3; n++)
      expect(await getThrough(agent, port)).toEqual({ connection: 'keep-alive', body: 'ok' });
    expect(closeListeners).toEqual([0, 0, 0]);
  });

  it('at the stop, an answer in flight says Connection: close, later ones too, and close() waits for no idle timeout', async () => {
    let answerFirst: () => void = () => undefined;
    let received: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => (received = resolve));
    let requests = 0;
    server = createServer({ keepAliveTimeout: 60_000 }, (_request, response) => {
      requests += 1;
      if (requests > 1) return response.end('later');
      answerFirst = () => response.end('first');
      received();
    });
    const stop = closeConnectionsOnceAnswered(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    agent = new Agent({ keepAlive: true });
    const first = getThrough(agent, port);
    await arrived;
    stop();
    // A connection opened after the stop and before the server stops listening.
    expect(await getThrough(agent, port)).toEqual({ connection: 'close', body: 'later' });
    const closed = closeTimed(server);
    answerFirst();
    expect(await first).toEqual({ connection: 'close', body: 'first' });
    expect(await closed).toBeLessThan(5_000);
  });

  it('an answer already begun at the stop keeps its keep-alive header, and its connection is closed once it ends', async () => {
    let answerRest: () => void = () => undefined;
    let begun: () => void = () => undefined;
    const headersSent = new Promise<void>((resolve) => (begun = resolve));
    server = createServer({ keepAliveTimeout: 20_000 }, (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('begun;');
      answerRest = () => response.end('ended');
      begun();
    });
    const stop = closeConnectionsOnceAnswered(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets: Socket[] = [];
    server.on('connection', (socket: Socket) => sockets.push(socket));
    const answer = getThrough(agent, port);
    await headersSent;
    stop();
    const closed = closeTimed(server);
    answerRest();
    // Its headers went out before the stop: they promised keep-alive, and the body is whole.
    expect(await answer).toEqual({ connection: 'keep-alive', body: 'begun;ended' });
    // The server closed the connection once the answer ended, not after keepAliveTimeout (20 s).
    expect(await closed).toBeLessThan(5_000);
    expect(sockets).toHaveLength(1);
    expect(sockets[0].destroyed).toBe(true);
  });
});
