import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
export const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function buildAjv(coerceTypes: boolean): Ajv {
  // strict: false because typebox schemas carry their own annotation keys.
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  addFormats(ajv);
  ajv.addFormat(HTTP_URL_FORMAT, { type: 'string', validate: isHttpUrl });
  return ajv;
}

/**
 * The base URL of a model provider: `uri` alone let `file:///etc/passwd` and other schemes through
 * to the provider clients, which answered with a 502 at the first query instead of a 400.
 */
export const HTTP_URL_FORMAT = 'http-url';

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * One pair a process, shared by every app built in it: ajv keeps each schema it compiled, by the
 * schema object, and route schemas are module constants, so an app built after the first compiles
 * none. Compiling them was about a tenth of a second of CPU per app; the tests build hundreds.
 */
const coercing = buildAjv(true);
const exact = buildAjv(false);

/**
 * Query strings and path parameters arrive as text and are coerced (`?limit=10`); JSON bodies
 * are not, so that `{"password": 12345678}` is a 400 instead of silently becoming a string.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) => (httpPart === 'body' ? exact.compile(schema as object) : decimalNumbersOnly(coercing.compile(schema as object), schema));
}

const DECIMAL_TEXT = { integer: /^-?\d+$/, number: /^-?\d+(\.\d+)?$/ } as const;

/**
 * ajv coerces text with Number(), which reads `0x10` as 16, `1e1` as 10 and ` 10` as 10: a
 * `?window_days=0x10` answered for 16 days. Numbers in a query string or path are plain decimals.
 */
function decimalNumbersOnly(validate: ValidateFunction, schema: unknown): ValidateFunction {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const numeric = Object.entries(properties).flatMap(([name, property]) =>
    property.type === 'integer' || property.type === 'number' ? [[name, property.type] as const] : []);
  if (numeric.length === 0) return validate;
  const checked = ((data: Record<string, unknown> | undefined) => {
    for (const [name, type] of numeric) {
      const value = data?.[name];
      if (typeof value === 'string' && !DECIMAL_TEXT[type].test(value)) {
        checked.errors = [{ instancePath: `/${name}`, schemaPath: `#/properties/${name}/type`, keyword: 'type', params: { type }, message: `must be ${type}` }];
        return false;
      }
    }
    const valid = validate(data);
    checked.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return checked;
}

/**
 * A nullable field (a union of a schema and null) that fails its schema also failed "must be
 * null" and "must match a schema in anyOf": the detail said three things where one is the reason.
 * Those two go when a more specific error at the same place remains.
 */
function withoutNullableNoise(errors: ErrorObject[]): ErrorObject[] {
  const isNoise = (error: ErrorObject) => error.keyword === 'anyOf' || (error.keyword === 'type' && (error.params as { type: unknown }).type === 'null');
  const specificAt = new Set(errors.filter((error) => !isNoise(error)).map((error) => error.instancePath));
  return errors.filter((error) => !isNoise(error) || !specificAt.has(error.instancePath));
}

/**
 * ajv's wording where it reads badly: "must NOT have fewer than 1 characters" for an empty string,
 * "must match pattern \"\\S\"" for a blank one.
 */
function plainMessage(error: ErrorObject): string | undefined {
  const { limit, pattern } = error.params as { limit?: number; pattern?: string };
  switch (error.keyword) {
    case 'minLength': return limit === 1 ? 'must not be empty' : `must be at least ${limit} characters long`;
    case 'maxLength': return `must be at most ${limit} characters long`;
    case 'minItems': return limit === 1 ? 'must list at least one item' : `must list at least ${limit} items`;
    case 'maxItems': return `must list at most ${limit} items`;
    // The schemas' pattern for text that must hold more than whitespace.
    case 'pattern': return pattern === '\\S' ? 'must not be blank' : undefined;
    default: return undefined;
  }
}

export function describeValidationErrors(errors: ErrorObject[], context: string): string {
  return withoutNullableNoise(errors).flatMap((error) => {
    const where = error.instancePath ? `${context}${error.instancePath.replaceAll('/', '.')}` : context;
    // Said with the values it takes: ajv's "must be equal to one of the allowed values" names none.
    if (error.keyword === 'enum') {
      return [`${where} must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((value) => JSON.stringify(value)).join(', ')}`];
    }
    if (error.keyword === 'additionalProperties') {
      return [`${where} has unknown field "${(error.params as { additionalProperty: string }).additionalProperty}"`];
    }
    if (error.keyword === 'format' && (error.params as { format: string }).format === HTTP_URL_FORMAT) {
      return [`${where} must be an http:// or https:// URL`];
    }
    if (error.keyword === 'required') {
      return [`${where} is missing required field "${(error.params as { missingProperty: string }).missingProperty}"`];
    }
    return [`${where} ${plainMessage(error) ?? error.message ?? 'is invalid'}`];
  }).join('; ');
}
