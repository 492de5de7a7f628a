import { applyDecorators } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiPayloadTooLargeResponse,
  ApiProperty,
  ApiPropertyOptional,
  ApiSchema,
  ApiServiceUnavailableResponse,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
  getSchemaPath,
  type ApiResponseOptions,
  type HeaderObject,
  type SchemaObject,
} from '@nestjs/swagger';

/**
 * The interface's shared string types, as components of the document (decision 0069). Properties refer to them
 * with `sharedType(name)`, so a generated client validates each the same way everywhere.
 */
export const SHARED_STRING_TYPES = {
  CountryCode: {
    type: 'string',
    pattern: '^[A-Z]{2}$',
    example: 'AR',
    description: 'ISO 3166-1 alpha-2: two uppercase letters',
  },
  CurrencyCode: {
    type: 'string',
    pattern: '^[A-Z]{3}$',
    example: 'ARS',
    description: 'ISO 4217: three uppercase letters',
  },
  AccountCXU: {
    type: 'string',
    pattern: '^[0-9]{22}$',
    example: '0000003100000000000018',
    description: 'a CVU or CBU: 22 digits',
  },
  AccountAlias: {
    type: 'string',
    pattern: '^[A-Za-z0-9.-]{6,20}$',
    example: 'sol.rio.mate',
    description: '6 to 20 letters, digits, dots and hyphens',
  },
} satisfies Record<string, SchemaObject>;

/** A property whose schema is a named component (an enum or a shared type defined elsewhere in the document). */
export const schemaRef = (name: string) => ({ allOf: [{ $ref: getSchemaPath(name) }] });

export const sharedType = (name: keyof typeof SHARED_STRING_TYPES) => schemaRef(name);

/**
 * A nullable property whose schema is a component: the component or null. OpenAPI 3.0's `nullable` widens only
 * a `type` beside it, so `{nullable, allOf: [$ref]}` does not allow null; validators and generators read this form
 * alike (an object or enum of the component, or null).
 */
export const nullableRef = (name: string, type: 'object' | 'string') => ({
  anyOf: [{ $ref: getSchemaPath(name) }, { type, nullable: true, enum: [null] }],
});

/** `Retry-After`, as every answer that asks the client to wait sends it. */
export const RETRY_AFTER: HeaderObject = {
  description: 'seconds to wait before trying again',
  schema: { type: 'integer', minimum: 1 },
};

/**
 * The base error body of the interface: name and message; each status's variant names its `name` (the one the
 * exception filter writes for that status) and adds its detail, or none.
 */
abstract class ErrorBody {
  name: string;
  @ApiProperty() message: string;
}

/** The `name` every body of one status carries. */
const ErrorName = (name: string) => ApiProperty({ enum: [name], description: 'the kind of error' });

@ApiSchema({ name: 'ErrorItem', description: 'One refused part of a request' })
export class ErrorItemDto {
  @ApiProperty({ description: 'body path, e.g. legalAddress.zipCode' }) path: string;
  @ApiProperty() message: string;
  @ApiProperty({ enum: ['required', 'invalid', 'notfound', 'duplicate'], enumName: 'ErrorItemType' })
  type: string;
}

@ApiSchema({ name: 'ValidationErrorDetail' })
class ValidationErrorDetailDto {
  @ApiProperty({ type: [ErrorItemDto] }) items: ErrorItemDto[];
}

@ApiSchema({ name: 'ValidationErrorResponse', description: '400: the request is not valid' })
export class ValidationErrorResponseDto extends ErrorBody {
  @ErrorName('ValidationError') declare name: string;
  @ApiProperty({ type: ValidationErrorDetailDto }) detail: ValidationErrorDetailDto;
}

@ApiSchema({ name: 'UnauthorizedErrorResponse', description: '401: missing or invalid credentials' })
export class UnauthorizedErrorResponseDto extends ErrorBody {
  @ErrorName('UnauthorizedError') declare name: string;
}

@ApiSchema({ name: 'ForbiddenErrorDetail' })
class ForbiddenErrorDetailDto {
  @ApiProperty({
    enum: ['FORBIDDEN', 'INSUFFICIENT_PERMISSIONS', 'INVALID_STATE'],
    enumName: 'ForbiddenReason',
  })
  reason: string;
}

@ApiSchema({ name: 'ForbiddenErrorResponse', description: '403: refused for the caller or the state' })
export class ForbiddenErrorResponseDto extends ErrorBody {
  @ErrorName('ForbiddenError') declare name: string;
  @ApiProperty({ type: ForbiddenErrorDetailDto }) detail: ForbiddenErrorDetailDto;
}

@ApiSchema({ name: 'NotFoundErrorDetail' })
class NotFoundErrorDetailDto {
  @ApiProperty({ description: 'the item not found' }) item: string;
}

@ApiSchema({ name: 'NotFoundErrorResponse', description: '404: unknown, or not the caller’s to see' })
export class NotFoundErrorResponseDto extends ErrorBody {
  @ErrorName('NotFoundError') declare name: string;
  @ApiProperty({ type: NotFoundErrorDetailDto }) detail: NotFoundErrorDetailDto;
}

@ApiSchema({ name: 'PayloadTooLargeErrorResponse', description: '413: the body is over its limit' })
export class PayloadTooLargeErrorResponseDto extends ErrorBody {
  @ErrorName('PayloadTooLargeError') declare name: string;
}

@ApiSchema({ name: 'TooManyRequestsErrorResponse', description: '429: a rate limit; Retry-After says when' })
export class TooManyRequestsErrorResponseDto extends ErrorBody {
  @ErrorName('TooManyRequestsError') declare name: string;
}

@ApiSchema({ name: 'InternalErrorDetail' })
class InternalErrorDetailDto {
  @ApiProperty({ description: 'the request id (X-Request-Id), to quote when reporting it' })
  trackingId: string;
}

@ApiSchema({ name: 'InternalErrorResponse', description: '500: a fault of the service' })
export class InternalErrorResponseDto extends ErrorBody {
  @ErrorName('InternalServerError') declare name: string;
  @ApiProperty({ type: InternalErrorDetailDto }) detail: InternalErrorDetailDto;
}

@ApiSchema({ name: 'ServiceUnavailableErrorDetail' })
class ServiceUnavailableErrorDetailDto {
  @ApiPropertyOptional({ description: 'a service the request needs is out of reach: the request id' })
  trackingId?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'a readiness check or the SIM swap provider failed: each check',
  })
  checks?: Record<string, unknown>;
}

@ApiSchema({ name: 'ServiceUnavailableErrorResponse', description: '503: try again after Retry-After' })
export class ServiceUnavailableErrorResponseDto extends ErrorBody {
  @ErrorName('ServiceUnavailableError') declare name: string;
  @ApiProperty({ type: ServiceUnavailableErrorDetailDto }) detail: ServiceUnavailableErrorDetailDto;
}

export const ApiNotFound = (description: string) =>
  ApiNotFoundResponse({ type: NotFoundErrorResponseDto, description });

export const ApiForbidden = (description: string) =>
  ApiForbiddenResponse({ type: ForbiddenErrorResponseDto, description });

export const ApiTooManyRequests = (description: string) =>
  ApiTooManyRequestsResponse({
    type: TooManyRequestsErrorResponseDto,
    description,
    headers: { 'Retry-After': RETRY_AFTER },
  });

const SERVICE_UNAVAILABLE =
  'A service this request needs is out of reach (detail.trackingId; Retry-After in seconds; a money POST retried ' +
  'with the same Idempotency-Key answers what happened)';

export const ServiceUnavailableResponse = (description = SERVICE_UNAVAILABLE) =>
  ApiServiceUnavailableResponse({
    type: ServiceUnavailableErrorResponseDto,
    description,
    headers: { 'Retry-After': RETRY_AFTER },
  });

/** The answers of every operation whatever its content: 500 and 503 (DocumentBuilder.addGlobalResponse). */
export const SERVER_ERROR_RESPONSES: ApiResponseOptions[] = [
  {
    status: 500,
    type: InternalErrorResponseDto,
    description: 'A fault of the service; detail.trackingId names the request in its log',
  },
  {
    status: 503,
    type: ServiceUnavailableErrorResponseDto,
    description: SERVICE_UNAVAILABLE,
    headers: { 'Retry-After': RETRY_AFTER },
  },
];

/**
 * The error responses every JSON route of a controller shares, `notFound` describing its 404 (a route may document
 * a more specific one).
 */
export const ErrorResponses = (notFound = 'Unknown resource, or one the caller cannot reach') =>
  applyDecorators(
    ApiBadRequestResponse({ type: ValidationErrorResponseDto, description: 'Validation error' }),
    ApiUnauthorizedResponse({
      type: UnauthorizedErrorResponseDto,
      description: 'Missing or invalid credentials',
    }),
    ApiNotFound(notFound),
    ApiPayloadTooLargeResponse({
      type: PayloadTooLargeErrorResponseDto,
      description: 'Body over BODY_LIMIT',
    }),
  );
