import { createParamDecorator, Injectable, type ExecutionContext, type PipeTransform } from '@nestjs/common';
import type { Request } from 'express';
import { isFormRequest } from '#common/http/form-body.js';
import { createValidationPipe } from '#common/http/validation.js';
import { OAuthTokenFormDto, TokenRequestDto } from './dto/token.dto.js';

/** A token request: the interface's JSON body, or the form a standard OAuth 2.0 client sends. */
export type TokenRequest = { form: false; body: TokenRequestDto } | { form: true; body: OAuthTokenFormDto };

interface RawTokenRequest {
  form: boolean;
  body: unknown;
}

/** The form parameters the token routes read; any other is ignored (RFC 6749 §3.2). */
const FORM_PARAMETERS = ['grant_type', 'client_id', 'client_assertion_type', 'client_assertion', 'scope'];

/** Validates either body: the JSON one exactly as the global pipe validates every other body. */
@Injectable()
export class TokenRequestPipe implements PipeTransform<RawTokenRequest, Promise<TokenRequest>> {
  private readonly validation = createValidationPipe();

  async transform({ form, body }: RawTokenRequest): Promise<TokenRequest> {
    if (!form) {
      const json = (await this.validation.transform(body, {
        type: 'body',
        metatype: TokenRequestDto,
      })) as TokenRequestDto;
      return { form: false, body: json };
    }
    const parameters = (body ?? {}) as Record<string, string>;
    const known = Object.fromEntries(
      FORM_PARAMETERS.filter((name) => name in parameters).map((name) => [name, parameters[name]]),
    );
    const validated = (await this.validation.transform(known, {
      type: 'body',
      metatype: OAuthTokenFormDto,
    })) as OAuthTokenFormDto;
    return { form: true, body: validated };
  }
}

/** The token request of either content type (the body middleware parsed a form only on the token routes). */
export const TokenRequestBody = () =>
  createParamDecorator((_data: unknown, context: ExecutionContext): RawTokenRequest => {
    const request = context.switchToHttp().getRequest<Request>();
    return { form: isFormRequest(request), body: request.body as unknown };
  })(TokenRequestPipe);
