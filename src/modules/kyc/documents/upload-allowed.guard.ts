import { Injectable, mixin, type CanActivate, type ExecutionContext, type Type } from '@nestjs/common';
import type { Request } from 'express';
import type { Principal } from '#common/auth/principal.js';
import { UnauthorizedError } from '#common/errors/domain-errors.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';
import type { OwnerType } from '../owners/kyc-owners.port.js';
import { DocumentsService } from './documents.service.js';

/**
 * An upload's owner and daily limit, checked before the body is read (decision 0074): guards run before
 * interceptors, so multer reads nothing of an upload to an owner the caller cannot reach, or past the limit.
 * The answers are the upload's own (400 for a malformed uuid, 404, 429 with Retry-After).
 */
export function UploadAllowed(ownerType: OwnerType): Type<CanActivate> {
  @Injectable()
  class UploadAllowedGuard implements CanActivate {
    constructor(private readonly documents: DocumentsService) {}

    async canActivate(context: ExecutionContext): Promise<boolean> {
      const request = context.switchToHttp().getRequest<Request & { user?: Principal }>();
      if (!request.user) throw new UnauthorizedError();
      const ownerId = new UuidPipe().transform(request.params.uuid, { type: 'param', data: 'uuid' });
      await this.documents.admitUpload(request.user, ownerType, ownerId);
      return true;
    }
  }
  return mixin(UploadAllowedGuard);
}
