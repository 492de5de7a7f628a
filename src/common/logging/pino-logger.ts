import {
  Inject,
  Injectable,
  Module,
  Scope,
  type DynamicModule,
  type INestApplicationContext,
  type LoggerService,
} from '@nestjs/common';
import type { Logger } from 'pino';

/** The process's root pino logger (one per process, built by `rootLogger`). */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/**
 * The logger services inject: pino's own call forms (`info(obj, msg)`, `info(msg)`), with the class's context
 * (`setContext`) as a `context` field. One instance per injecting class (transient), all writing through the
 * process's one root logger. Nothing per request: no child logger, no async context (decision 0016).
 */
@Injectable({ scope: Scope.TRANSIENT })
export class PinoLogger {
  /** The root logger, for code outside DI (the access line, set when the logging module is built). */
  static root: Logger;

  private logger: Logger;

  constructor(@Inject(ROOT_LOGGER) private readonly rootLogger: Logger) {
    this.logger = rootLogger;
  }

  /** Every later line of this instance carries `context: value`. */
  setContext(value: string): void {
    this.logger = this.rootLogger.child({ context: value });
  }

  trace(...args: Parameters<Logger['trace']>): void {
    this.logger.trace(...args);
  }
  debug(...args: Parameters<Logger['debug']>): void {
    this.logger.debug(...args);
  }
  info(...args: Parameters<Logger['info']>): void {
    this.logger.info(...args);
  }
  warn(...args: Parameters<Logger['warn']>): void {
    this.logger.warn(...args);
  }
  error(...args: Parameters<Logger['error']>): void {
    this.logger.error(...args);
  }
  fatal(...args: Parameters<Logger['fatal']>): void {
    this.logger.fatal(...args);
  }
}

/**
 * Nest's own logger (`app.useLogger`) written as pino lines: the last optional parameter Nest passes is the
 * context; an Error (or Nest's `message, stack` form of its exception handlers) goes under `err`.
 */
@Injectable()
export class NestPinoLogger implements LoggerService {
  constructor(@Inject(ROOT_LOGGER) private readonly logger: Logger) {}

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.logger.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    let rest = params;
    if (rest.length > 0) {
      fields.context = rest[rest.length - 1];
      rest = rest.slice(0, -1);
    }
    if (message instanceof Error) {
      fields.err = message;
      this.logger[level](fields);
    } else if (typeof message === 'object' && message !== null) {
      this.logger[level]({ ...fields, ...message });
    } else if (level === 'error' && typeof rest[0] === 'string' && /\n\s*at /.test(rest[0])) {
      // Nest's exception handlers call error(message, stack[, context]).
      const err = new Error(String(message));
      err.stack = rest[0];
      this.logger[level]({ ...fields, err });
    } else {
      this.logger[level](fields, String(message));
    }
  }
}

/** Global: every module may inject `PinoLogger`; the entry points hand `NestPinoLogger` to `app.useLogger`. */
@Module({})
export class LoggingModule {
  static forRoot(root: Logger): DynamicModule {
    PinoLogger.root = root;
    return {
      module: LoggingModule,
      global: true,
      providers: [{ provide: ROOT_LOGGER, useValue: root }, PinoLogger, NestPinoLogger],
      exports: [ROOT_LOGGER, PinoLogger, NestPinoLogger],
    };
  }
}

/**
 * The options every entry point gives NestFactory: Nest's start-up lines are held until `useNestPinoLogger`
 * writes them as pino lines. A start that fails drops them instead of letting Nest print them in its own
 * coloured text format on stdout (its default on a failed start), and a provider that fails to build is thrown
 * to the entry point (`abortOnError: false`) instead of Nest ending the process itself: the entry point's one
 * JSON `fatal` line says what failed, and it leaves the embedded database as on any failed start.
 */
export const NEST_LOG_OPTIONS = { bufferLogs: true, autoFlushLogs: false, abortOnError: false } as const;

/** Nest's own lines as pino lines from now on, the start-up lines held so far included. */
export function useNestPinoLogger(app: INestApplicationContext): void {
  app.useLogger(app.get(NestPinoLogger));
  app.flushLogs();
}
