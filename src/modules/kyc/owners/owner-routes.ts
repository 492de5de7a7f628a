import { applyDecorators, Delete, Get, HttpCode, type Type } from '@nestjs/common';
import {
  ApiForbiddenResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
} from '@nestjs/swagger';
import { AuthClient, AuthEither } from '#common/auth/auth.decorator.js';
import { ErrorResponseDto } from '#common/http/openapi.js';
import { Paginated } from '#common/http/pagination.js';

/** `GET all`: the application's users or companies, oldest first, a page at a time (client credentials). */
export const ListOwnersRoute = (summary: string, type: Type<unknown>) =>
  applyDecorators(
    Get('all'),
    AuthClient(),
    Paginated(),
    ApiOperation({ summary }),
    ApiOkResponse({ type: [type] }),
  );

/** `DELETE :uuid`: a soft delete, refused while the owner's account holds money (decision 0009). */
export const DeleteOwnerRoute = (owner: 'user' | 'company') =>
  applyDecorators(
    Delete(':uuid'),
    AuthEither(),
    HttpCode(204),
    ApiOperation({ summary: `Delete a ${owner} (kept for audit; gone from the API)` }),
    ApiNoContentResponse(),
    ApiNotFoundResponse({ type: ErrorResponseDto, description: `Unknown ${owner}` }),
    ApiForbiddenResponse({
      type: ErrorResponseDto,
      description: `INVALID_STATE: the ${owner} owns an account holding money`,
    }),
  );

/**
 * The 403 of a change of what identifies the owner, sent with the owner's own token (refuseOwnIdentityChange,
 * decisions 0054 and 0059); `fields` names them as the route's body does.
 */
export const OwnIdentityForbiddenResponse = (fields: string) =>
  ApiForbiddenResponse({
    type: ErrorResponseDto,
    description: `INSUFFICIENT_PERMISSIONS: a change of ${fields} with a user token (the owner's own); the application makes it`,
  });
