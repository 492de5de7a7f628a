import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import type { IncomingMessage } from 'node:http';
import { ValidationFailedError } from '../errors/domain-errors.js';

export const FORM_BODY_KEY = 'wallet:form-body';

/**
 * The route also takes `application/x-www-form-urlencoded` bodies (the OAuth 2.0 token routes, RFC 6749 §4.4);
 * every other route refuses them. The body middleware finds it through the route catalog before routing.
 */
export const AcceptsFormBody = () => SetMetadata(FORM_BODY_KEY, true);

export const MULTIPART_BODY_KEY = 'wallet:multipart-body';

/**
 * The route takes one file as a `multipart/form-data` upload in the part `field` (multer, as configured by the
 * module). Every other route refuses a multipart body with the 400 of any body that is not JSON: the body
 * middleware, which finds this through the route catalog, used to pass multipart bodies on to any route, whose
 * handler then saw no body at all (a PATCH answered 200 and changed nothing; decision 0100).
 */
export const AcceptsFileUpload = (field: string) =>
  applyDecorators(SetMetadata(MULTIPART_BODY_KEY, true), UseInterceptors(FileInterceptor(field)));

const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;

/** Whether the request declares a form body (whatever its route). */
export function isFormRequest(request: IncomingMessage): boolean {
  return FORM_TYPE.test(request.headers['content-type'] ?? '');
}

/**
 * The parameters of a form body, in UTF-8 (the only charset it may declare): a parameter sent twice is
 * refused (RFC 6749 §3.2), one sent without a value counts as absent (§3.1), a NUL character is refused
 * anywhere (no parameter of the token request may hold one). A null-prototype object: any name is data.
 */
export function parseForm(body: Buffer, contentType: string): Record<string, string> {
  const charset = CHARSET.exec(contentType)?.[1];
  if (charset !== undefined && charset.toLowerCase() !== 'utf-8') {
    throw ValidationFailedError.single('', 'invalid', 'a form body must be UTF-8');
  }
  const form = Object.create(null) as Record<string, string>;
  const seen = new Set<string>();
  for (const [name, value] of new URLSearchParams(body.toString('utf8'))) {
    if (name.includes('\u0000') || value.includes('\u0000')) {
      throw ValidationFailedError.single('', 'invalid', 'form parameters must not contain NUL characters');
    }
    if (seen.has(name)) throw ValidationFailedError.single(name, 'duplicate', `${name} is repeated`);
    seen.add(name);
    if (value !== '') form[name] = value;
  }
  return form;
}
