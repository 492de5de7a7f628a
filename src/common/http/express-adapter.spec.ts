import { IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { constructorsWithPrototypes, PresetPrototypesExpressAdapter } from './express-adapter.js';

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
