// The bare NestJS reference: a real NestFactory.create application on Express (the same Nest and Express
// versions as the service), one controller answering GET /ping with {"status":"ok"}, logger disabled, nothing
// else (no guard, pipe, filter, middleware, database). Decorators are applied as plain functions.
// Usage: PORT=… node bench/bare-nest.mjs  (prints "bare nest listening" when ready)
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

class PingController {
  ping() {
    return { status: 'ok' };
  }
}
Controller()(PingController);
Get('ping')(
  PingController.prototype,
  'ping',
  Object.getOwnPropertyDescriptor(PingController.prototype, 'ping'),
);

class BareModule {}
Module({ controllers: [PingController] })(BareModule);

const app = await NestFactory.create(BareModule, { logger: false });
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 3999), '127.0.0.1');
console.log('bare nest listening');
