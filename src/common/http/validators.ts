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

/** The first `max` code points of `value` (a surrogate pair is never split), as codePointLength counts them. */
export function firstCodePoints(value: string, max: number): string {
  let end = 0;
  for (let points = 0; points < max && end < value.length; points++) {
    const unit = value.charCodeAt(end);
    const next = value.charCodeAt(end + 1);
    end += unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
  }
  return value.slice(0, end);
}

/** A string's length in Unicode code points: what JSON Schema's `maxLength` and PostgreSQL's `char_length` count. */
export function codePointLength(value: string): number {
  let length = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    // A high surrogate followed by a low one is one code point; a lone surrogate counts as one.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    length++;
  }
  return length;
}

/**
 * A string of `min` to `max` Unicode code points (decision 0010: the OpenAPI `minLength`/`maxLength` a client
 * reads). class-validator's `Length` and `MaxLength` count a surrogate pair as one but skip the variation selectors
 * U+FE0E/U+FE0F altogether, so 64 "❤️" (128 code points) passed a limit of 64. Same constraint names and messages as
 * theirs.
 */
export function Length(min: number, max: number, validation?: ValidationOptions) {
  return codePointRule('isLength', [min, max], min, max, validation);
}

/** At most `max` Unicode code points ({@link Length}). */
export function MaxLength(max: number, validation?: ValidationOptions) {
  return codePointRule('maxLength', [max], 0, max, validation);
}

/** One rule for both: `name` and `constraints` as class-validator's own rule of that name has them. */
function codePointRule(
  name: string,
  constraints: number[],
  min: number,
  max: number,
  validation?: ValidationOptions,
) {
  const fits = (value: unknown) =>
    typeof value === 'string' && codePointLength(value) >= min && codePointLength(value) <= max;
  return (target: object, property: string) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: property,
      constraints,
      options: validation,
      validator: {
        validate: fits,
        defaultMessage(args: ValidationArguments) {
          const short = typeof args.value === 'string' && codePointLength(args.value) < min;
          return short
            ? `${args.property} must be longer than or equal to ${min} characters`
            : `${args.property} must be shorter than or equal to ${max} characters`;
        },
      },
    });
}

/**
 * A string with something besides whitespace: for the names the services store trimmed, where `"   "` passed
 * class-validator's `IsNotEmpty` and was stored as `""` (decision 0091). Same rule name and message as
 * `IsNotEmpty`, so a blank name is refused as an empty one is.
 */
export function IsNotBlank(validation?: ValidationOptions) {
  return (target: object, property: string) =>
    registerDecorator({
      name: 'isNotEmpty',
      target: target.constructor,
      propertyName: property,
      options: validation,
      validator: {
        validate: (value: unknown) => typeof value === 'string' && value.trim() !== '',
        defaultMessage: (args: ValidationArguments) => `${args.property} should not be empty`,
      },
    });
}
