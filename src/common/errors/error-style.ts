import { SetMetadata } from '@nestjs/common';

/**
 * How a route writes its errors. `json` is the interface's ErrorResponse; `oauth`
 * the token endpoint's own body; `text` the plain `NO ROUTES` text/html answer
 * of the SMS and SIM swap operations.
 */
export type ErrorStyle = 'json' | 'oauth' | 'text';

export const ERROR_STYLE_KEY = 'wallet:error-style';

/** Declares the error body a controller or route writes (default: json). */
export const UseErrorStyle = (style: ErrorStyle) => SetMetadata(ERROR_STYLE_KEY, style);
