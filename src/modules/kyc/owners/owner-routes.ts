import { applyDecorators, Delete, Get, HttpCode, type Type } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { AuthClient, AuthEither } from '#common/auth/auth.decorator.js';
import { ApiForbidden, ApiNotFound } from '#common/http/openapi.js';
import { Paginated } from '#common/http/pagination.js';

/** `GET all`: the application's users or companies, oldest first, a page at a time (client credentials). */
export const ListOwnersRoute = (summary: string, type: Type<unknown>, operationId: string) =>
  applyDecorators(
    Get('all'),
    AuthClient(),
    Paginated(),
    ApiOperation({ summary, operationId }),
    ApiOkResponse({ type: [type] }),
  );

/** `DELETE :uuid`: a soft delete, refused while the owner's account holds money (decision 0009). */
export const DeleteOwnerRoute = (owner: 'user' | 'company', operationId: string) =>
  applyDecorators(
    Delete(':uuid'),
    AuthEither(),
    HttpCode(204),
    ApiOperation({ summary: `Delete a ${owner} (kept for audit; gone from the API)`, operationId }),
    ApiNoContentResponse({ description: 'Deleted' }),
    ApiNotFound(`Unknown ${owner}`),
    ApiForbidden(`INVALID_STATE: the ${owner} owns an account holding money`),
  );

/**
 * The 403 of a change of what identifies the owner, sent with the owner's own token (refuseOwnIdentityChange,
 * decisions 0054 and 0059); `fields` names them as the route's body does.
 */
export const OwnIdentityForbiddenResponse = (fields: string) =>
  ApiForbidden(
    `INSUFFICIENT_PERMISSIONS: a change of ${fields} with a user token (the owner's own); the application makes it`,
  );
