import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Request, Response } from 'express';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import helmet from 'helmet';
import { PinoLogger } from '../logging/pino-logger.js';
import { RepeatThrottle } from '../logging/repeat-throttle.js';
import type { AppConfig } from '#config/app-config.js';
import { BEARER_SCHEME, CC_SCHEME } from '../auth/auth.decorator.js';
import { MetricsRegistry } from '../metrics/metrics.registry.js';
import { mountQueueDashboard } from '../queue/queue-dashboard.js';
import { httpObservability, recordHeaders } from './http-observability.js';
import { SERVER_ERROR_RESPONSES, SHARED_STRING_TYPES } from './openapi.js';
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
  capConnections(app.getHttpServer() as Server, app.get(MetricsRegistry), config.maxConnections);
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
      responsePrototype: (app.getHttpAdapter().getInstance() as { response: object }).response,
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
  answerOnce(app, [`${prefix}/openapi.json`, `${prefix}/openapi.yaml`]);
  SwaggerModule.setup('docs', app, document, {
    useGlobalPrefix: true,
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Wallet service API v1',
  });
  return document;
}

/**
 * The first 200 answer of each of these GET routes is kept and sent again to every later GET (or HEAD), so the
 * handler behind it runs once: @nestjs/swagger serialises the OpenAPI document for every request (js-yaml's dump of
 * the 160 KB document took 25-40 ms of the event loop, without a token), and the document does not change while
 * the process runs (decision 0073). The document itself is still built on its first request (decision 0019).
 */
function answerOnce(app: NestExpressApplication, paths: readonly string[]): void {
  const answers = new Map<string, { type: string; body: string }>();
  const keys = new Set(paths.map(routeKey));
  app.use((request: Request, response: Response, next: () => void) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return next();
    const key = routeKey(request.path);
    if (!keys.has(key)) return next();
    const kept = answers.get(key);
    if (kept) {
      response.setHeader('Content-Type', kept.type);
      response.send(kept.body);
      return;
    }
    const send = response.send.bind(response);
    response.send = (body?: unknown) => {
      const type = response.getHeader('Content-Type');
      if (response.statusCode === 200 && typeof body === 'string' && typeof type === 'string')
        answers.set(key, { type, body });
      return send(body);
    };
    next();
  });
}

/**
 * A path as Express routes it: without regard to case, a trailing slash or not (its defaults). The kept answers are
 * found by it, so `/v1/OPENAPI.YAML/` cannot make the handler serialise the document again on every request.
 */
function routeKey(path: string): string {
  return path.toLowerCase().replace(/\/+$/, '');
}

/**
 * Idle keep-alive connections stay open HTTP_KEEP_ALIVE_TIMEOUT_MS (above a load balancer's idle timeout).
 * Slowloris protection: a client that has not sent its headers within HTTP_HEADERS_TIMEOUT_MS, or
 * the whole request within HTTP_REQUEST_TIMEOUT_MS, gets 408 and the connection is closed. Node
 * checks every connectionsCheckingInterval (30 s by default, read when the server starts listening),
 * so the check runs often enough for the timeouts to mean what they say. MAX_CONNECTIONS: capConnections.
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

/**
 * At most MAX_CONNECTIONS connections are open at once (decision 0073): one past it is closed as soon as it is
 * accepted, before a byte is read, and those already open go on. It is counted in
 * `http_connections_dropped_total` and logged at warn at most once per 30 s with how many were left out since, so a
 * flood of connections does not flood the log too (decision 0078). No address is logged.
 *
 * Not Node's `server.maxConnections`: in an API process of `API_PROCESSES` (node:cluster, round-robin) a process at
 * that cap hands the connection back to the primary, which hands it to the next process, and so on without end
 * while every process is full: the connection was neither closed nor served, and the primary and the API processes
 * each spent about a core passing it around (found in review, 2026-12-02). Here the process that gets it closes it.
 */
function capConnections(server: Server, metrics: MetricsRegistry, maxConnections: number): void {
  const throttle = new RepeatThrottle();
  let logger: PinoLogger | undefined;
  let open = 0;
  server.on('connection', (socket: Socket) => {
    if (open >= maxConnections) {
      socket.destroy();
      metrics.httpConnectionsDropped.inc();
      throttle.report('drop', (fields) => {
        if (!logger) {
          logger = new PinoLogger(PinoLogger.root);
          logger.setContext('HttpServer');
        }
        logger.warn(
          { maxConnections, ...fields },
          'connection dropped: MAX_CONNECTIONS connections are open',
        );
      });
      return;
    }
    open += 1;
    socket.once('close', () => (open -= 1));
  });
}

export function buildOpenApi(app: NestExpressApplication, config: AppConfig): OpenAPIObject {
  // Paths are relative to {base_url} as the interface writes them; the server is {base_url} itself (decision 0069).
  const server = config.publicBaseUrl.replace(/\/$/, '');
  const builder = new DocumentBuilder()
    .setTitle('Digital Wallet, Identity and Messaging Service')
    .setDescription(
      'Interface v1. Paths are relative to the server URL, `{base_url}` (PUBLIC_BASE_URL, ending in `/v1/`). ' +
        'Each error status has its own body (name, message and the detail of that status); the token endpoints ' +
        'and the SMS and SIM swap operations answer their 4xx as described on them. Any operation may answer 500 ' +
        'and 503 (with Retry-After). See the README for authentication (client assertions, user tokens) and webhooks.',
    )
    .setVersion('1.0.0')
    .addServer(server, '{base_url}')
    .addOAuth2(
      {
        type: 'oauth2',
        description:
          'OAuth 2.0 client credentials with a signed client assertion (RFC 7523 `private_key_jwt`; there is no ' +
          'client secret): a JWT signed ES256 with a key registered for the application (header `kid` = its key ' +
          'id), `iss` = `sub` = the application id, `aud` = the token URL (`{base_url}oauth/token`, ' +
          '`{base_url}oauth/app/token`) or `{base_url}`, `exp` - `iat` at most 3600 s, an optional `jti` for single ' +
          'use. POST /oauth/token takes it as the RFC 6749 form (`client_assertion`), POST /oauth/app/token as the ' +
          "interface's JSON body (`token`). The access token is sent as `Authorization: Bearer <token>`.",
        flows: { clientCredentials: { tokenUrl: `${config.publicBaseUrl}oauth/token`, scopes: {} } },
      },
      CC_SCHEME,
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description:
          'A user token the application signs for one of its users or companies: a JWT signed ES256 with a key ' +
          'registered for the application (header `kid` = its key id), `iss` = the application id, `sub` = the ' +
          "user's or company's uuid, `aud` = `{base_url}`, `exp` - `iat` at most 3600 s. It sees and changes only " +
          'what its `sub` owns (anything else is 404); operations that accept only OAuth2ClientCredentials answer ' +
          'it 401.',
      },
      BEARER_SCHEME,
    )
    .addGlobalResponse(...SERVER_ERROR_RESPONSES);
  const base = builder.build();
  base.components = { ...base.components, schemas: { ...SHARED_STRING_TYPES } };
  return completeDocument(SwaggerModule.createDocument(app, base, { ignoreGlobalPrefix: true }));
}

type Operation = {
  parameters?: { name: string; in: string; schema?: Record<string, unknown> }[];
  responses?: Record<string, { headers?: Record<string, unknown> }>;
  security?: unknown[];
};

/**
 * What every operation shares, written once here rather than on each route: objects are closed, a `{uuid}` path
 * parameter is a uuid (the routes answer 400 otherwise), a list that takes `cursor` sends the next page's in
 * `X-Next-Cursor`, and a public operation says so with `security: []`. Nest cannot write the last one (it drops an
 * empty list), nor keep a property's description off a shared enum component (enumName copies the first
 * property's): these two are done here.
 */
function completeDocument(document: OpenAPIObject): OpenAPIObject {
  for (const schema of Object.values(document.components?.schemas ?? {})) {
    const object = schema as Record<string, unknown> & { properties?: object; enum?: unknown[] };
    // Objects are closed (the interface's rule; the validation pipe refuses any other property and answers carry
    // none): each schema with properties that does not say otherwise (a free-form object says so) gets
    // additionalProperties false.
    if (object.properties && object.additionalProperties === undefined) object.additionalProperties = false;
    if (object.enum) for (const key of ['description', 'x-enumNames']) delete object[key];
  }
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item as Record<string, Operation>)) {
      if (typeof operation !== 'object' || operation === null || !('responses' in operation)) continue;
      // Every route declares its policy (the route catalog refuses to start otherwise): no scheme means public.
      operation.security ??= [];
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
