import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import helmet from 'helmet';
import { PinoLogger } from '../logging/pino-logger.js';
import type { AppConfig } from '#config/app-config.js';
import { BEARER_SCHEME, CC_SCHEME, OPS_SCHEME } from '../auth/auth.decorator.js';
import { MetricsRegistry } from '../metrics/metrics.registry.js';
import { mountQueueDashboard } from '../queue/queue-dashboard.js';
import { httpObservability, recordHeaders } from './http-observability.js';
import { NEXT_CURSOR_HEADER } from './pagination.js';
import { createValidationPipe } from './validation.js';

/**
 * HTTP settings shared by main.ts and the test harness, so tests run the app as served. Returns
 * the OpenAPI document's getter: the document (a few MiB of heap) is built on its first use, the
 * first request for the docs page or document, not at start.
 */
export function configureApp(app: NestExpressApplication, config: AppConfig): () => OpenAPIObject {
  // A hop count or the trusted proxies' addresses, never `true` (refused by the config: the left-most
  // X-Forwarded-For entry is the caller's to write, and the token rate limit is keyed by req.ip).
  const { trustProxy } = config;
  app.set('trust proxy', typeof trustProxy === 'object' ? [...trustProxy] : trustProxy);
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // A JSON API's answers are not cached by validators: no ETag (and no hash of every body).
  app.set('etag', false);
  applyServerTimeouts(app.getHttpServer() as Server, config);
  const docsPrefix = `/${config.routePrefix}/docs`;
  const dashboardPrefix = `/${config.routePrefix}/queues`;
  // A JSON API's answers: the headers that matter for them (OWASP REST Security), not those meant for
  // HTML pages (DNS prefetch, IE download options, Flash policies, the XSS auditor). Money and personal
  // data are never stored by a cache (`no-store`; a route may declare its own, as the JWKS does).
  const apiHeaders = [
    ...recordHeaders(
      helmet({
        contentSecurityPolicy: {
          useDefaults: false,
          directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
        },
        xFrameOptions: { action: 'deny' },
        crossOriginOpenerPolicy: false,
        originAgentCluster: false,
        xDnsPrefetchControl: false,
        xDownloadOptions: false,
        xPermittedCrossDomainPolicies: false,
        xXssProtection: false,
      }),
    ),
    ['Cache-Control', 'no-store'] as const,
  ];
  // The interactive page needs its own inline bootstrap script.
  const docsHeaders = recordHeaders(helmet({ contentSecurityPolicy: false }));
  app.use(
    httpObservability({
      logger: () => PinoLogger.root,
      metrics: app.get(MetricsRegistry),
      headersFor: (path) =>
        path.startsWith(docsPrefix) || path.startsWith(dashboardPrefix) ? docsHeaders : apiHeaders,
      quiet: (path) => path.includes('/health/'),
    }),
  );
  // Nest's own not-found handler lives under the prefix: answer everything else here, in the same body.
  const prefix = `/${config.routePrefix}`;
  // RFC 8414 §3.1: the metadata of an issuer with a path (`{base_url}` ends in `/v1/`) is at the well-known
  // suffix put before that path, where standard clients look for it (oauth4webapi's `algorithm: 'oauth2'`);
  // it is the prefixed route's answer (decision 0024).
  const metadataPath = `${prefix}/.well-known/oauth-authorization-server`;
  const rootFormMetadataPath = `/.well-known/oauth-authorization-server${prefix}`;
  app.use((request: IncomingMessage & { path: string }, response: ServerResponse, next: () => void) => {
    if (request.path === prefix || request.path.startsWith(`${prefix}/`)) return next();
    if (request.path === rootFormMetadataPath) {
      const url = request.url ?? '';
      const query = url.indexOf('?');
      request.url = query === -1 ? metadataPath : metadataPath + url.slice(query);
      return next();
    }
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
  let built: OpenAPIObject | undefined;
  const document = () => (built ??= buildOpenApi(app, config));
  SwaggerModule.setup('docs', app, document, {
    useGlobalPrefix: true,
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Wallet service API v1',
  });
  return document;
}

/**
 * Idle keep-alive connections stay open HTTP_KEEP_ALIVE_TIMEOUT_MS (above a load balancer's idle timeout).
 * Slowloris protection: a client that has not sent its headers within HTTP_HEADERS_TIMEOUT_MS, or
 * the whole request within HTTP_REQUEST_TIMEOUT_MS, gets 408 and the connection is closed. Node
 * checks every connectionsCheckingInterval (30 s by default, read when the server starts listening),
 * so the check runs often enough for the timeouts to mean what they say.
 */
function applyServerTimeouts(server: Server, config: AppConfig): void {
  server.headersTimeout = config.httpHeadersTimeoutMs;
  server.requestTimeout = config.httpRequestTimeoutMs;
  server.keepAliveTimeout = config.httpKeepAliveTimeoutMs;
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
  return completeDocument(SwaggerModule.createDocument(app, builder.build()));
}

type Operation = {
  parameters?: { name: string; in: string; schema?: Record<string, unknown> }[];
  responses?: Record<string, { headers?: Record<string, unknown> }>;
};

/**
 * What every operation shares, written once here rather than on each route: objects are closed, a `{uuid}` path
 * parameter is a uuid (the routes answer 400 otherwise), and a list that takes `cursor` sends the next page's in
 * `X-Next-Cursor`.
 */
function completeDocument(document: OpenAPIObject): OpenAPIObject {
  // Objects are closed (the interface's rule; the validation pipe refuses any other property and answers carry
  // none): each schema with properties that does not say otherwise (a free-form object says so) gets
  // additionalProperties false.
  for (const schema of Object.values(document.components?.schemas ?? {})) {
    const object = schema as { type?: string; properties?: object; additionalProperties?: unknown };
    if (object.properties && object.additionalProperties === undefined) object.additionalProperties = false;
  }
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item as Record<string, Operation>)) {
      if (typeof operation !== 'object' || operation === null || !('responses' in operation)) continue;
      const parameters = operation.parameters ?? [];
      for (const parameter of parameters) {
        if (parameter.in === 'path' && parameter.name === 'uuid')
          parameter.schema = { type: 'string', format: 'uuid' };
      }
      const ok = operation.responses?.['200'];
      if (ok && parameters.some((parameter) => parameter.in === 'query' && parameter.name === 'cursor')) {
        ok.headers = {
          [NEXT_CURSOR_HEADER]: {
            description: 'the cursor of the next page (absent on the last page)',
            schema: { type: 'string' },
          },
          ...ok.headers,
        };
      }
    }
  }
  return document;
}
