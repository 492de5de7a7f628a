import { applyDecorators } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiNotFoundResponse,
  ApiPayloadTooLargeResponse,
  ApiProperty,
  ApiPropertyOptional,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';

export class ErrorItemDto {
  @ApiProperty({ description: 'body path, e.g. legalAddress.zipCode' }) path: string;
  @ApiProperty() message: string;
  @ApiProperty({ enum: ['required', 'invalid', 'notfound', 'duplicate'] }) type: string;
}

export class ErrorDetailDto {
  @ApiPropertyOptional({ type: [ErrorItemDto], description: 'validation errors' }) items?: ErrorItemDto[];
  @ApiPropertyOptional({ description: 'not found: the item not found' }) item?: string;
  @ApiPropertyOptional({ description: 'internal error: the request id' }) trackingId?: string;
  @ApiPropertyOptional({ enum: ['FORBIDDEN', 'INSUFFICIENT_PERMISSIONS', 'INVALID_STATE'] }) reason?: string;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'readiness (503): each dependency check, as in its 200 answer',
  })
  checks?: Record<string, unknown>;
}

/** ErrorResponse of the interface. */
export class ErrorResponseDto {
  @ApiProperty() name: string;
  @ApiProperty() message: string;
  @ApiPropertyOptional({ type: ErrorDetailDto }) detail?: ErrorDetailDto;
}

/** The error responses every JSON route shares (a route may document a more specific one). */
export const ErrorResponses = () =>
  applyDecorators(
    ApiBadRequestResponse({ type: ErrorResponseDto, description: 'Validation error' }),
    ApiUnauthorizedResponse({ type: ErrorResponseDto, description: 'Missing or invalid credentials' }),
    ApiNotFoundResponse({
      type: ErrorResponseDto,
      description: 'Unknown resource, or one the caller cannot reach',
    }),
    ApiPayloadTooLargeResponse({ type: ErrorResponseDto, description: 'Body over BODY_LIMIT' }),
  );
