import type { ValidationError } from '@nestjs/common';
import { Type } from 'class-transformer';
import {
  ArrayMinSize,
  IsArray,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Min,
  ValidateNested,
} from 'class-validator';
import { ValidationFailedError, type ValidationItem } from '../errors/domain-errors.js';
import { createValidationPipe, toValidationItems } from './validation.js';
import { Length } from './validators.js';

// With stopAtFirstError, class-validator checks the decorator nearest the
// property first: the type check goes last in the list so it wins.
class AddressDto {
  @IsString()
  streetName: string;

  @Length(4, 8)
  @IsString()
  zipCode: string;
}

class LineDto {
  @IsString()
  name: string;

  @Min(1)
  @IsInt()
  quantity: number;

  @IsOptional()
  @IsString()
  comment?: string;
}

/** The other order: the range check runs first and hides the type error. */
class RangeFirstDto {
  @IsInt()
  @Min(1)
  count: number;
}

class OrderDto {
  @IsString()
  name: string;

  @IsOptional()
  @IsString()
  note?: string;

  // @ValidateNested alone lets a missing object through: @IsObject makes it required.
  @ValidateNested()
  @Type(() => AddressDto)
  @IsObject()
  legalAddress: AddressDto;

  @ValidateNested({ each: true })
  @Type(() => LineDto)
  @ArrayMinSize(1)
  @IsArray()
  items: LineDto[];
}

/** A nested object guarded by @ValidateNested only. */
class LooseDto {
  @ValidateNested()
  @Type(() => AddressDto)
  address?: AddressDto;
}

const valid = () => ({
  name: 'order',
  legalAddress: { streetName: 'Main Street 1', zipCode: '12345' },
  items: [
    { name: 'first', quantity: 1 },
    { name: 'second', quantity: 2 },
  ],
});

describe('toValidationItems', () => {
  const error = (fields: Partial<ValidationError> & { property: string }): ValidationError => ({
    children: [],
    ...fields,
  });

  it('maps a top-level constraint to invalid with its message', () => {
    expect(
      toValidationItems([
        error({ property: 'name', value: 5, constraints: { isString: 'name must be a string' } }),
      ]),
    ).toEqual([{ path: 'name', message: 'name must be a string', type: 'invalid' }]);
  });

  it('maps a missing (undefined or null) value to required', () => {
    expect(
      toValidationItems([
        error({ property: 'name', value: undefined, constraints: { isString: 'name must be a string' } }),
        error({ property: 'note', value: null, constraints: { isString: 'note must be a string' } }),
      ]),
    ).toEqual([
      { path: 'name', message: 'name is required', type: 'required' },
      { path: 'note', message: 'note is required', type: 'required' },
    ]);
  });

  it('builds dotted and indexed paths from the error tree', () => {
    const tree = [
      error({
        property: 'legalAddress',
        value: {},
        children: [error({ property: 'zipCode', value: '1', constraints: { isLength: 'too short' } })],
      }),
      error({
        property: 'items',
        value: [],
        children: [
          error({
            property: '3',
            value: {},
            children: [error({ property: 'name', value: undefined, constraints: { isString: 'x' } })],
          }),
        ],
      }),
    ];
    expect(toValidationItems(tree)).toEqual([
      { path: 'legalAddress.zipCode', message: 'too short', type: 'invalid' },
      { path: 'items[3].name', message: 'items[3].name is required', type: 'required' },
    ]);
  });

  it('reports an unknown property as invalid, whatever its value', () => {
    expect(
      toValidationItems([
        error({
          property: 'extra',
          value: undefined,
          constraints: { whitelistValidation: 'property extra should not exist' },
        }),
      ]),
    ).toEqual([{ path: 'extra', message: 'property extra is not allowed', type: 'invalid' }]);
  });

  it('honours a prefix and returns nothing for no errors', () => {
    expect(toValidationItems([], 'body')).toEqual([]);
    expect(
      toValidationItems(
        [error({ property: 'a', value: 1, constraints: { isString: 'a must be a string' } })],
        'x',
      ),
    ).toEqual([{ path: 'x.a', message: 'a must be a string', type: 'invalid' }]);
  });
});

describe('createValidationPipe', () => {
  const pipe = createValidationPipe();
  const validate = (value: unknown) => pipe.transform(value, { type: 'body', metatype: OrderDto });

  /** The items of the ValidationFailedError the pipe rejects with. */
  async function rejection(value: unknown): Promise<ValidationItem[]> {
    const error: unknown = await validate(value).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(ValidationFailedError);
    return (error as ValidationFailedError).items;
  }

  it('returns a DTO instance with nested instances for a valid body', async () => {
    const result: unknown = await validate(valid());
    expect(result).toBeInstanceOf(OrderDto);
    const order = result as OrderDto;
    expect(order.legalAddress).toBeInstanceOf(AddressDto);
    expect(order.items.map((item) => item instanceof LineDto)).toEqual([true, true]);
    expect(order).toEqual(valid());
  });

  it('takes an optional property sent as null for absent, at every depth (a service never sees the null)', async () => {
    const body = { ...valid(), note: null, items: [{ name: 'first', quantity: 1, comment: null }] };
    const order = (await validate(body)) as OrderDto;
    expect(Object.keys(order)).not.toContain('note');
    expect(Object.keys(order.items[0])).toEqual(['name', 'quantity']);
    // A required property sent as null is still required.
    await expect(rejection({ ...valid(), name: null })).resolves.toEqual([
      { path: 'name', message: 'name is required', type: 'required' },
    ]);
  });

  it('reports a missing property as required', async () => {
    const { name: _name, ...body } = valid();
    await expect(rejection(body)).resolves.toEqual([
      { path: 'name', message: 'name is required', type: 'required' },
    ]);
  });

  it('reports a wrong type as invalid, without converting it', async () => {
    await expect(rejection({ ...valid(), name: 42 })).resolves.toEqual([
      { path: 'name', message: 'name must be a string', type: 'invalid' },
    ]);
    await expect(rejection({ ...valid(), items: [{ name: 'first', quantity: '1' }] })).resolves.toEqual([
      { path: 'items[0].quantity', message: 'quantity must be an integer number', type: 'invalid' },
    ]);
  });

  it('reports nested object errors with a dotted path', async () => {
    await expect(
      rejection({ ...valid(), legalAddress: { streetName: 'Main Street 1', zipCode: '1' } }),
    ).resolves.toEqual([
      {
        path: 'legalAddress.zipCode',
        message: 'zipCode must be longer than or equal to 4 characters',
        type: 'invalid',
      },
    ]);
    await expect(rejection({ ...valid(), legalAddress: { zipCode: '12345' } })).resolves.toEqual([
      { path: 'legalAddress.streetName', message: 'legalAddress.streetName is required', type: 'required' },
    ]);
  });

  it('reports a missing or mistyped nested object', async () => {
    const { legalAddress: _legalAddress, ...body } = valid();
    await expect(rejection(body)).resolves.toEqual([
      { path: 'legalAddress', message: 'legalAddress is required', type: 'required' },
    ]);
    await expect(rejection({ ...valid(), legalAddress: null })).resolves.toEqual([
      { path: 'legalAddress', message: 'legalAddress is required', type: 'required' },
    ]);
    await expect(rejection({ ...valid(), legalAddress: 'Main Street 1' })).resolves.toEqual([
      { path: 'legalAddress', message: 'legalAddress must be an object', type: 'invalid' },
    ]);
  });

  it('lets a missing nested object through when only @ValidateNested guards it', async () => {
    const result: unknown = await pipe.transform({}, { type: 'body', metatype: LooseDto });
    expect(result).toBeInstanceOf(LooseDto);
    expect((result as LooseDto).address).toBeUndefined();
  });

  it('reports errors inside arrays of nested objects with an indexed path', async () => {
    const body = {
      ...valid(),
      items: [{ name: 'ok', quantity: 1 }, { name: 'ok', quantity: 1 }, { quantity: 0 }],
    };
    await expect(rejection(body)).resolves.toEqual([
      { path: 'items[2].name', message: 'items[2].name is required', type: 'required' },
      { path: 'items[2].quantity', message: 'quantity must not be less than 1', type: 'invalid' },
    ]);
  });

  it('reports a non-array or a non-object element of an array', async () => {
    await expect(rejection({ ...valid(), items: 'first' })).resolves.toEqual([
      { path: 'items', message: 'items must be an array', type: 'invalid' },
    ]);
    await expect(rejection({ ...valid(), items: ['first'] })).resolves.toEqual([
      {
        path: 'items[0]',
        message: 'each value in nested property items must be either object or array',
        type: 'invalid',
      },
    ]);
  });

  it('refuses an unknown property, at the top level and nested, naming it in the path', async () => {
    await expect(rejection({ ...valid(), admin: true })).resolves.toEqual([
      { path: 'admin', message: 'property admin is not allowed', type: 'invalid' },
    ]);
    const body = valid();
    await expect(
      rejection({ ...body, items: [body.items[0], { ...body.items[1], price: 3 }] }),
    ).resolves.toEqual([
      { path: 'items[1].price', message: 'property price is not allowed', type: 'invalid' },
    ]);
  });

  it('reports only the first failing constraint per property, nearest decorator first', async () => {
    const error: unknown = await pipe
      .transform({ count: '5' }, { type: 'body', metatype: RangeFirstDto })
      .catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(ValidationFailedError);
    expect((error as ValidationFailedError).items).toEqual([
      { path: 'count', message: 'count must not be less than 1', type: 'invalid' },
    ]);
  });

  it('reports every failing property of one body', async () => {
    const items = await rejection({
      note: 7,
      legalAddress: { streetName: 'x', zipCode: 12345 },
      items: [],
    });
    expect(items).toEqual([
      { path: 'name', message: 'name is required', type: 'required' },
      { path: 'note', message: 'note must be a string', type: 'invalid' },
      { path: 'legalAddress.zipCode', message: 'zipCode must be a string', type: 'invalid' },
      { path: 'items', message: 'items must contain at least 1 elements', type: 'invalid' },
    ]);
  });
});
