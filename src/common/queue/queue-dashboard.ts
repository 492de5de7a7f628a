import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Queue } from 'bullmq';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { carriesOperatorToken } from '#common/auth/operator-credentials.js';
import type { AppConfig } from '#config/app-config.js';
import { QUEUES } from './queue-names.js';
import { QueueFactory } from './queue.factory.js';

/**
 * Bull Board at {prefix}/queues, behind the operator token (METRICS_TOKEN):
 * `Authorization: Bearer <token>`, or HTTP Basic with the token as password
 * (so a browser can open it). Without METRICS_TOKEN nobody gets in.
 *
 * The board (~18 MiB resident once its packages are loaded) is built on the
 * first authorised request, not at start: most API processes never serve it.
 */
export function mountQueueDashboard(app: NestExpressApplication, config: AppConfig): string {
  const basePath = `/${config.routePrefix}/queues`;
  const queues = app.get(QueueFactory);
  let board: Promise<RequestHandler> | undefined;
  app.use(
    basePath,
    operatorOnly(config.metricsToken),
    (request: Request, response: Response, next: NextFunction) => {
      board ??= buildBoard(basePath, queues).catch((error: unknown) => {
        board = undefined; // the next request tries again
        throw error;
      });
      board.then((router) => router(request, response, next), next);
    },
  );
  return basePath;
}

async function buildBoard(basePath: string, queues: QueueFactory): Promise<RequestHandler> {
  const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/express'),
  ]);
  const board = new ExpressAdapter();
  board.setBasePath(basePath);
  createBullBoard({
    // Bull Board declares BullMQ's default (Redis) queue type; it calls only what both backends' queues have.
    queues: Object.values(QUEUES).map(
      (name) => new BullMQAdapter(queues.queue(name) as Queue, { readOnlyMode: true }),
    ),
    serverAdapter: board,
  });
  return board.getRouter() as RequestHandler;
}

function operatorOnly(token: string | undefined) {
  return (request: Request, response: Response, next: NextFunction) => {
    if (carriesOperatorToken(request.headers.authorization, token, { basic: true })) return next();
    response.setHeader('WWW-Authenticate', 'Basic realm="queues"');
    response.status(401).json({ name: 'UnauthorizedError', message: 'Missing or invalid credentials' });
  };
}
