import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { ValidationFailedError } from '../errors/domain-errors.js';

/**
 * A path parameter that must be a uuid (any version, any case, as Nest's ParseUUIDPipe takes it), refused as a
 * validation item at the parameter's name: ParseUUIDPipe's own error became an item at `''`, the path decision
 * 0004 keeps for the body as a whole.
 */
@Injectable()
export class UuidPipe implements PipeTransform<unknown, string> {
  transform(value: unknown, metadata: ArgumentMetadata): string {
    if (typeof value === 'string' && isUUID(value)) return value;
    const name = metadata.data ?? 'uuid';
    throw ValidationFailedError.single(name, 'invalid', `${name} must be a uuid`);
  }
}
