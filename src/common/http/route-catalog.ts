import { Inject, Injectable, OnModuleInit, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { AUTH_POLICY_KEY, type AuthPolicy } from '../auth/auth.decorator.js';
import { ERROR_STYLE_KEY, type ErrorStyle } from '../errors/error-style.js';
import { FORM_BODY_KEY, MULTIPART_BODY_KEY } from './form-body.js';

export interface RouteEntry {
  readonly method: string;
  /** Full path as Express sees it, e.g. `/v1/users/:uuid`. */
  readonly path: string;
  readonly policy: AuthPolicy | undefined;
  readonly errorStyle: ErrorStyle;
  /** Takes urlencoded form bodies too (@AcceptsFormBody). */
  readonly formBody: boolean;
  /** Takes a multipart upload (@AcceptsFileUpload). */
  readonly multipartBody: boolean;
  readonly handler: string;
  readonly pattern: RegExp;
}

/**
 * Every route of the application with its auth policy and error style, built
 * once at start-up. Deny by default: a route without a policy stops the start.
 * The exception filter asks it for the error style of requests that failed
 * before routing (malformed JSON, oversized bodies).
 */
@Injectable()
export class RouteCatalog implements OnModuleInit {
  private entries: RouteEntry[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const entries: RouteEntry[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      const type = wrapper.metatype as (new (...args: never[]) => unknown) | undefined;
      if (!instance || !type) continue;
      const controllerPaths = toArray(
        Reflect.getMetadata(PATH_METADATA, type) as string | string[] | undefined,
      );
      const prototype = Object.getPrototypeOf(instance) as object;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = (prototype as Record<string, unknown>)[name] as (...args: unknown[]) => unknown;
        const methodPath = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
        const requestMethod = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (methodPath === undefined || requestMethod === undefined) continue;
        const policy = this.reflector.getAllAndOverride<AuthPolicy | undefined>(AUTH_POLICY_KEY, [
          handler,
          type,
        ]);
        const errorStyle =
          this.reflector.getAllAndOverride<ErrorStyle | undefined>(ERROR_STYLE_KEY, [handler, type]) ??
          'json';
        const formBody =
          this.reflector.getAllAndOverride<boolean | undefined>(FORM_BODY_KEY, [handler, type]) ?? false;
        const multipartBody =
          this.reflector.getAllAndOverride<boolean | undefined>(MULTIPART_BODY_KEY, [handler, type]) ?? false;
        for (const base of controllerPaths.length ? controllerPaths : ['']) {
          for (const sub of toArray(methodPath)) {
            const path = joinPath(this.config.routePrefix, base, sub);
            entries.push({
              method: RequestMethod[requestMethod],
              path,
              policy,
              errorStyle,
              formBody,
              multipartBody,
              handler: `${type.name}.${name}`,
              // Without regard to case, as Express routes (its default, kept): a request that reaches a route gets
              // that route's error style and body parser.
              pattern: new RegExp(`^${patternOf(path)}$`, 'i'),
            });
          }
        }
      }
    }
    const unguarded = entries.filter((entry) => entry.policy === undefined);
    if (unguarded.length > 0) {
      throw new Error(
        `Routes without an auth policy (deny by default; add @AuthEither, @AuthClient, @Public or @AuthOperator): ${unguarded
          .map((entry) => `${entry.method} ${entry.path} (${entry.handler})`)
          .join(', ')}`,
      );
    }
    this.entries = entries.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
    // One expression per method for "is there such a route": asked for every request with a body.
    const byMethod = new Map<string, string[]>();
    for (const entry of entries)
      byMethod.set(entry.method, [...(byMethod.get(entry.method) ?? []), entry.path]);
    this.routed = new Map(
      [...byMethod].map(([method, paths]) => [
        method,
        new RegExp(`^(?:${paths.map(patternOf).join('|')})$`, 'i'),
      ]),
    );
  }

  private routed = new Map<string, RegExp>();

  /** Whether a route of this method serves this path (as Express routes it: any case, a trailing slash). */
  serves(method: string, path: string): boolean {
    return this.routed.get(method.toUpperCase())?.test(path) ?? false;
  }

  all(): readonly RouteEntry[] {
    return this.entries;
  }

  /** The error style for a request path (any method), `json` when no route matches. */
  errorStyleFor(method: string, path: string): ErrorStyle {
    const candidates = this.entries.filter((entry) => entry.pattern.test(path));
    const exact = candidates.find((entry) => entry.method === method.toUpperCase());
    return (exact ?? candidates[0])?.errorStyle ?? 'json';
  }

  /** Whether the route of this method and path takes a multipart upload (@AcceptsFileUpload). */
  acceptsMultipart(method: string, path: string): boolean {
    return this.takes('multipartBody', method, path);
  }

  /** Whether the route of this method and path takes urlencoded form bodies (@AcceptsFormBody). */
  acceptsForm(method: string, path: string): boolean {
    return this.takes('formBody', method, path);
  }

  private takes(body: 'formBody' | 'multipartBody', method: string, path: string): boolean {
    const upper = method.toUpperCase();
    return this.entries.some((entry) => entry[body] && entry.method === upper && entry.pattern.test(path));
  }
}

/** A route's path as a pattern (no anchors): its parameters any one segment, a trailing slash allowed. */
function patternOf(path: string): string {
  return `${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?`;
}

function toArray(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

function joinPath(...parts: string[]): string {
  const joined = parts
    .map((part) => part.replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/');
  return `/${joined}`;
}
