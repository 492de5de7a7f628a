import { applyDecorators } from '@nestjs/common';
import { Type } from 'class-transformer';
import {
  IsDefined,
  IsISO31661Alpha2,
  IsObject,
  IsString,
  Matches,
  registerDecorator,
  ValidateNested,
  type ValidationArguments,
  type ValidationOptions,
} from 'class-validator';

/** A calendar date `YYYY-MM-DD` that exists (no 2023-02-30), optionally strictly in the past. */
export function IsRealDate(options: { past?: boolean } = {}, validation?: ValidationOptions) {
  return (target: object, property: string) =>
    registerDecorator({
      name: 'isRealDate',
      target: target.constructor,
      propertyName: property,
      options: validation,
      validator: {
        validate(value: unknown) {
          if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
          const date = new Date(`${value}T00:00:00Z`);
          if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value) return false;
          if (date.getUTCFullYear() < 1900) return false;
          return !options.past || date.getTime() < Date.now() - 86_400_000 / 2;
        },
        defaultMessage(args: ValidationArguments) {
          return `${args.property} must be a real date YYYY-MM-DD${options.past ? ' in the past' : ''}`;
        },
      },
    });
}

/**
 * Two uppercase letters that are an ISO 3166-1 alpha-2 code (class-validator's list, but case-sensitive). The
 * string check runs first, so a wrong type reports as such (docs/architecture.md, DTO conventions).
 */
export const IsCountryCode = () =>
  applyDecorators(
    IsString(),
    IsISO31661Alpha2(),
    Matches(/^[A-Z]{2}$/, { message: '$property must be two uppercase letters (ISO 3166-1 alpha-2)' }),
  );

/**
 * A required nested object of class `type`: IsDefined, IsObject, then its own rules (ValidateNested alone
 * lets a missing object through).
 */
export const IsRequiredNested = (type: () => new () => object) =>
  applyDecorators(IsDefined(), IsObject(), Type(type), ValidateNested());
