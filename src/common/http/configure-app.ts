import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import helmet from 'helmet';
import type { AppConfig } from '../../config/app-config.js';
import { BEARER_SCHEME, CC_SCHEME, OPS_SCHEME } from '../auth/auth.decorator.js';
import { requestId } from '../logging/logging.js';
import { mountQueueDashboard } from '../queue/queue-dashboard.js';
import { createValidationPipe } from './validation.js';

/** HTTP settings shared by main.ts and the test harness, so tests run the app as served. */
export function configureApp(app: NestExpressApplication, config: AppConfig): OpenAPIObject {
  app.set('trust proxy', config.trustProxy);
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  applyServerTimeouts(app.getHttpServer() as Server, config);
  const docsPrefix = `/${config.routePrefix}/docs`;
  const dashboardPrefix = `/${config.routePrefix}/queues`;
  const apiHelmet = helmet();
  // The interactive page needs its own inline bootstrap script.
  const docsHelmet = helmet({ contentSecurityPolicy: false });
  app.use((request: { path: string }, response: unknown, next: () => void) =>
    (request.path.startsWith(docsPrefix) || request.path.startsWith(dashboardPrefix)
      ? docsHelmet
      : apiHelmet)(request as never, response as never, next),
  );
  // Nest's own not-found handler lives under the prefix: answer everything else here, in the same body.
  const prefix = `/${config.routePrefix}`;
  app.use((request: IncomingMessage & { path: string }, response: ServerResponse, next: () => void) => {
    if (request.path === prefix || request.path.startsWith(`${prefix}/`)) return next();
    requestId(request, response);
    response.statusCode = 404;
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.end(
      JSON.stringify({
        name: 'NotFoundError',
        message: 'Resource not found',
        detail: { item: request.path },
      }),
    );
  });
  mountQueueDashboard(app, config);
  app.setGlobalPrefix(config.routePrefix);
  app.useGlobalPipes(createValidationPipe());
  const document = buildOpenApi(app, config);
  SwaggerModule.setup('docs', app, document, {
    useGlobalPrefix: true,
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Wallet service API v1',
  });
  return document;
}

/**
 * Slowloris protection: a client that has not sent its headers within HTTP_HEADERS_TIMEOUT_MS, or
 * the whole request within HTTP_REQUEST_TIMEOUT_MS, gets 408 and the connection is closed. Node
 * checks every connectionsCheckingInterval (30 s by default, read when the server starts listening),
 * so the check runs often enough for the timeouts to mean what they say.
 */
function applyServerTimeouts(server: Server, config: AppConfig): void {
  server.headersTimeout = config.httpHeadersTimeoutMs;
  server.requestTimeout = config.httpRequestTimeoutMs;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
    1000,
    Math.ceil(config.httpHeadersTimeoutMs / 4),
  );
}

export function buildOpenApi(app: NestExpressApplication, config: AppConfig): OpenAPIObject {
  const origin = new URL(config.publicBaseUrl).origin;
  const builder = new DocumentBuilder()
    .setTitle('Digital Wallet, Identity and Messaging Service')
    .setDescription(
      'Interface v1. Errors use the ErrorResponse body (name, message, detail); the token endpoint uses its own body. ' +
        'See the README for authentication (client assertions, user tokens) and webhooks.',
    )
    .setVersion('1.0.0')
    .addServer(origin)
    .addOAuth2(
      {
        type: 'oauth2',
        flows: { clientCredentials: { tokenUrl: `${config.publicBaseUrl}oauth/token`, scopes: {} } },
      },
      CC_SCHEME,
    )
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, BEARER_SCHEME)
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'opaque', description: 'METRICS_TOKEN' },
      OPS_SCHEME,
    );
  return SwaggerModule.createDocument(app, builder.build());
}
