import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function buildAjv(coerceTypes: boolean): Ajv {
  // strict: false because typebox schemas carry their own annotation keys.
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  addFormats(ajv);
  return ajv;
}

/**
 * Query strings and path parameters arrive as text and are coerced (`?limit=10`); JSON bodies
 * are not, so that `{"password": 12345678}` is a 400 instead of silently becoming a string.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const coercing = buildAjv(true);
  const exact = buildAjv(false);
  return ({ schema, httpPart }) => (httpPart === 'body' ? exact : coercing).compile(schema as object);
}

export function describeValidationErrors(errors: ErrorObject[], context: string): string {
  // An enumeration (a union of literals) fails once per member and once more as a union: the
  // detail said "must be equal to constant" four times. Said once, with the values it takes.
  const literalsAt = new Map<string, unknown[]>();
  for (const error of errors) {
    if (error.keyword === 'const') literalsAt.set(error.instancePath, [...(literalsAt.get(error.instancePath) ?? []), (error.params as { allowedValue: unknown }).allowedValue]);
  }
  const enumerationsDescribed = new Set<string>();
  return errors.flatMap((error) => {
    const where = error.instancePath ? `${context}${error.instancePath.replaceAll('/', '.')}` : context;
    const literals = literalsAt.get(error.instancePath);
    if (literals && (error.keyword === 'const' || error.keyword === 'anyOf')) {
      if (enumerationsDescribed.has(error.instancePath)) return [];
      enumerationsDescribed.add(error.instancePath);
      return [`${where} must be one of ${literals.map((value) => JSON.stringify(value)).join(', ')}`];
    }
    if (error.keyword === 'additionalProperties') {
      return [`${where} has unknown field "${(error.params as { additionalProperty: string }).additionalProperty}"`];
    }
    if (error.keyword === 'required') {
      return [`${where} is missing required field "${(error.params as { missingProperty: string }).missingProperty}"`];
    }
    return [`${where} ${error.message ?? 'is invalid'}`];
  }).join('; ');
}
