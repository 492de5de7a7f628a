import { ValidationPipe, type ArgumentMetadata, type ValidationError } from '@nestjs/common';
import { getMetadataStorage, IS_OPTIONAL, ValidationTypes } from 'class-validator';
import { ValidationFailedError, type ValidationItem } from '../errors/domain-errors.js';
import { childPath } from './exact-numbers.js';
import { assertStorableJson } from './json-body.middleware.js';

/**
 * Flattens class-validator's error tree into the interface's `detail.items`:
 * body paths (`legalAddress.zipCode`, `items[0].name`), and `required` for a
 * missing value, `invalid` for everything else (unknown properties included).
 */
export function toValidationItems(errors: ValidationError[], prefix = ''): ValidationItem[] {
  const items: ValidationItem[] = [];
  for (const error of errors) {
    const path = childPath(prefix, error.property);
    const constraints = error.constraints ?? {};
    const keys = Object.keys(constraints);
    if (keys.includes('whitelistValidation')) {
      items.push({ path, message: `property ${error.property} is not allowed`, type: 'invalid' });
    } else if (keys.length > 0) {
      const missing = error.value === undefined || error.value === null;
      items.push({
        path,
        message: missing ? `${path} is required` : constraints[keys[0]],
        type: missing ? 'required' : 'invalid',
      });
    }
    if (error.children?.length) items.push(...toValidationItems(error.children, path));
  }
  return items;
}

/**
 * An optional property sent as `null` counts as absent: class-validator's `@IsOptional()` skips its checks for
 * null as for undefined, and the services then took the null for a value (a PATCH wrote it into a NOT NULL column:
 * 500). The pipe removes such properties from the DTO it hands on, at every depth, so that every route reads them
 * as not sent. No request property of the interface is nullable.
 */
export function dropNullOptionals(value: unknown): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const item of value) dropNullOptionals(item);
    return;
  }
  // DTO instances only (their class has validation metadata): not free-form JSON objects, files or buffers.
  const record = value as Record<string, unknown>;
  const optional = optionalProperties(record.constructor);
  if (!optional) return;
  for (const property of optional) if (record[property] === null) delete record[property];
  for (const child of Object.values(record)) dropNullOptionals(child);
}

/** Per class, read once: its @IsOptional properties, or undefined for a class without validation metadata. */
const optionalByClass = new WeakMap<object, readonly string[] | undefined>();

function optionalProperties(type: object): readonly string[] | undefined {
  if (optionalByClass.has(type)) return optionalByClass.get(type);
  const rules = getMetadataStorage().getTargetValidationMetadatas(type as () => void, '', true, false);
  const optional =
    rules.length === 0
      ? undefined
      : rules
          .filter((rule) => rule.type === ValidationTypes.CONDITIONAL_VALIDATION && rule.name === IS_OPTIONAL)
          .map((rule) => rule.propertyName);
  optionalByClass.set(type, optional);
  return optional;
}

class ApiValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // A query string gets the JSON body's check (NUL characters, lone surrogates, prototype keys); JSON bodies
    // had it in JsonBodyMiddleware, multipart fields in the upload's service.
    if (metadata.type === 'query') assertStorableJson(value);
    const result: unknown = await super.transform(value, metadata);
    if (metadata.type === 'body' || metadata.type === 'query') dropNullOptionals(result);
    return result;
  }
}

/**
 * Whitelist, refuse unknown properties, no implicit type conversion, DTO instances out; an optional property sent
 * as null is absent (dropNullOptionals).
 */
export function createValidationPipe(): ValidationPipe {
  return new ApiValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    validationError: { target: false, value: true },
    stopAtFirstError: true,
    exceptionFactory: (errors) => new ValidationFailedError(toValidationItems(errors)),
  });
}
