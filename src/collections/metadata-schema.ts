import { Ajv, type CodeKeywordDefinition, type KeywordCxt, type ValidateFunction } from 'ajv';
import { RE2JS } from 're2js';
import { BadRequestError } from '../errors.js';
import { addFormats } from '../http/validation.js';

/**
 * A collection's `metadata_schema` runs on the main thread for every upload and every raw-vector
 * upsert, so a schema whose check is not linear in the metadata holds the whole process: with
 * backtracking, `"pattern": "^(a+)+$"` took 160 s on 30 a's and a "!", and `uniqueItems` over
 * 20,000 objects 21 s. One compiler, for create/update and for validation, so a schema accepted
 * at create is checked the same way at upload.
 */
export function compileMetadataSchema(schema: Record<string, unknown>): ValidateFunction {
  if (!metaSchemaChecker.validateSchema(schema)) {
    throw new BadRequestError(`metadata_schema is not a valid JSON Schema: ${metaSchemaChecker.errorsText(metaSchemaChecker.errors, { dataVar: 'metadata_schema' })}`);
  }
  try {
    return metadataSchemaCompiler().compile(schema);
  } catch (error) {
    if (error instanceof RefusedSchemaError) throw new BadRequestError(`metadata_schema is refused: ${error.message}`);
    throw new BadRequestError(`metadata_schema is not a valid JSON Schema: ${(error as Error).message}`);
  }
}

// Checks schemas against JSON Schema's meta-schema, compiled once: compiling it took 20 ms, for
// each schema, in the fresh compiler below. It has the formats too, for the meta-schema's own
// `"format": "regex"` on `pattern`.
const metaSchemaChecker = addFormats(new Ajv({ strict: false, allErrors: true }));
// The meta-schema asks for unique `enum` values of any kind, which ajv compares pairwise: an enum
// of 20,000 objects (230 KB) held create for 16 s. Compared by canonical JSON text instead, O(n).
metaSchemaChecker.removeKeyword('uniqueItems');
metaSchemaChecker.addKeyword({
  keyword: 'uniqueItems',
  type: 'array',
  schemaType: 'boolean',
  error: { message: 'must NOT have duplicate items' },
  validate: (unique: boolean, items: unknown[]) => !unique || new Set(items.map(canonicalJson)).size === items.length,
});

/** JSON text with object keys sorted: equal for two values exactly when ajv's deep equality holds. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const entries = Object.entries(value).sort(([left], [right]) => (left < right ? -1 : 1));
  return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(',')}}`;
}

/** A schema ajv could run but the service will not: its message is the client's detail. */
class RefusedSchemaError extends Error {}

/**
 * A fresh ajv per schema: ajv keeps every compiled schema and refuses a second one with the
 * same `$id`, so a shared instance would grow with every PATCH and refuse two collections whose
 * schemas share an `$id`. Validators are cached per collection (src/documents/metadata-rules.ts).
 */
function metadataSchemaCompiler(): Ajv {
  // strict: false keeps unknown keywords (annotations such as "x-owner") allowed, as before.
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, code: { regExp: linearRegExp } });
  addFormats(ajv);
  refuseAtCompile(ajv, 'uniqueItems', quadraticUniqueItems);
  refuseAtCompile(ajv, 'format', (cxt) => (ajv.formats[cxt.schema as string] === undefined ? `unknown format ${JSON.stringify(cxt.schema)} at ${cxt.it.errSchemaPath}` : null));
  return ajv;
}

/**
 * Schema patterns run on RE2 (re2js), whose matching time is linear in the input. RE2 has no
 * backreferences or lookaround, the constructs that need backtracking: such a pattern is refused
 * when the schema is compiled, naming it. JavaScript syntax RE2 spells differently (`(?<name>`,
 * `\u{...}`) is translated first.
 */
const linearRegExp = Object.assign(
  (pattern: string) => {
    try {
      return RE2JS.compile(RE2JS.translateRegExp(pattern));
    } catch (error) {
      throw new RefusedSchemaError(`pattern ${JSON.stringify(pattern)} is not supported: ${(error as Error).message} (patterns run on a linear-time engine, RE2, which has no backreferences or lookaround)`);
    }
  },
  // Read only by ajv's standalone code generation, which the service does not use.
  { code: 're2js' },
);

/** Replaces ajv's own `keyword` with the same code, preceded by a check that may refuse the schema. */
function refuseAtCompile(ajv: Ajv, keyword: string, refusal: (cxt: KeywordCxt) => string | null): void {
  const definition = ajv.getKeyword(keyword) as CodeKeywordDefinition;
  ajv.removeKeyword(keyword);
  ajv.addKeyword({
    ...definition,
    code(cxt, ruleType) {
      const reason = refusal(cxt);
      if (reason) throw new RefusedSchemaError(reason);
      definition.code(cxt, ruleType);
    },
  });
}

const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/**
 * ajv 8.20 (dist/vocabularies/validation/uniqueItems.js) checks `uniqueItems` in O(n) only when
 * `items` is a single schema whose own `type` names types, none "object" or "array": it then
 * keys a map by item value. In every other case (no `items`, a tuple, `true`, a `$ref`, an
 * `enum`/`const` without `type`, a type that admits objects or arrays) it compares every pair by
 * deep equality, O(n²). The rule is ajv's own condition, so nothing quadratic is accepted and
 * nothing linear refused.
 */
function quadraticUniqueItems(cxt: KeywordCxt): string | null {
  if (cxt.schema !== true) return null;
  const { items } = cxt.parentSchema as { items?: unknown };
  const types = typeof items === 'object' && items !== null && !Array.isArray(items) ? [(items as { type?: unknown }).type ?? []].flat() : [];
  if (types.length > 0 && types.every((type) => SCALAR_TYPES.has(type as string))) return null;
  return `uniqueItems at ${cxt.it.errSchemaPath} needs "items" with a "type" of scalars only (string, number, integer, boolean, null; an enum or $ref also needs that "type"): otherwise every pair of items is compared, quadratic in the array's length`;
}
