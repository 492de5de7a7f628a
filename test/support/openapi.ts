import type { OpenAPIObject } from '@nestjs/swagger';
import { Ajv, type ValidateFunction } from 'ajv';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Formats the document uses that JSON Schema validators do not all know. */
export const OPENAPI_FORMATS = {
  uuid: UUID,
  date: /^\d{4}-\d{2}-\d{2}$/,
  'date-time': /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i,
  email: /^[^\s@]+@[^\s@]+$/,
  float: true,
  double: true,
  int32: true,
  int64: true,
  binary: true,
} as const;

/** The path of the document's server (`/v1` for `http://host/v1`): its paths are relative to it. */
export function serverPath(document: Pick<OpenAPIObject, 'servers'>): string {
  const server = document.servers?.[0]?.url;
  if (!server) throw new Error('the document declares no server');
  return new URL(server).pathname.replace(/\/$/, '');
}

/**
 * An Ajv that reads the document's schemas as OpenAPI 3.0 says, as response validators and mocks that follow it do
 * (Ajv's own `nullable`: it widens only the `type` beside it, and an enum must list null): `compile` takes a schema
 * of the document (its `$ref`s to `#/components/schemas/…`).
 */
export function openApiAjv(document: OpenAPIObject): { compile: (schema: object) => ValidateFunction } {
  const ajv = new Ajv({ allErrors: true, strict: false, formats: OPENAPI_FORMATS });
  ajv.addSchema({ $id: 'openapi', components: { schemas: document.components?.schemas ?? {} } });
  return {
    compile: (schema: object) =>
      ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/'))),
  };
}
