import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { ValidationFailedError, type ValidationItem } from '../errors/domain-errors.js';

/**
 * Flattens class-validator's error tree into the interface's `detail.items`:
 * body paths (`legalAddress.zipCode`, `items[0].name`), and `required` for a
 * missing value, `invalid` for everything else (unknown properties included).
 */
export function toValidationItems(errors: ValidationError[], prefix = ''): ValidationItem[] {
  const items: ValidationItem[] = [];
  for (const error of errors) {
    const path = /^\d+$/.test(error.property)
      ? `${prefix}[${error.property}]`
      : prefix
        ? `${prefix}.${error.property}`
        : error.property;
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

/** Whitelist, refuse unknown properties, no implicit type conversion, DTO instances out. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
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
