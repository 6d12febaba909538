/**
 * Validates a client's filter JSON (api-contract section 3) and converts it into the
 * `MetadataFilter` tree, so everything past the HTTP edge can trust its shape.
 */
import { BadRequestError } from '../../errors.js';
import type { FieldCondition, FieldFilter, FilterScalar, MetadataFilter } from './filter-types.js';
import { metadataFieldPath } from './field-path.js';

/**
 * Bounds on what a client may send. Real filters are a handful of conditions two or three levels
 * deep; 16 levels and 1,000 nodes leave room for generated filters while keeping evaluation
 * (once per candidate chunk) and the generated SQL small, and the parser's recursion shallow.
 */
export const maxFilterDepth = 16;
export const maxFilterNodes = 1000;

const fieldOperators: ReadonlySet<string> = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists']);

/** `{"a": 1}` but not arrays, null, or class instances. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * Strings reach PostgreSQL as text parameters, which cannot hold NUL, and unpaired UTF-16
 * surrogates would be replaced on the way (so SQL and JavaScript would compare different strings).
 */
function assertEncodable(text: string, what: string): void {
  if (text.includes('\u0000') || /\p{Cs}/u.test(text)) {
    throw new BadRequestError(`${what} must be valid Unicode without NUL characters`);
  }
}

function isScalar(value: unknown): value is FilterScalar {
  return value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

/** JSON.parse reads 1e400 as Infinity: a number, but none that stored metadata (jsonb) can hold. */
function beyondDouble(operator: string, field: string, value: number): BadRequestError {
  return new BadRequestError(`Operator "${operator}" on field "${field}" needs a finite number: ${value > 0 ? '' : '-'}1e400 and the like are beyond a double`);
}

class FilterParser {
  private nodeCount = 0;

  private countNode(): void {
    this.nodeCount += 1;
    if (this.nodeCount > maxFilterNodes) throw new BadRequestError(`Filter has more than ${maxFilterNodes} nodes`);
  }

  /** One filter object: its keys are ANDed. `depth` is 1 for the top-level object. */
  parseObject(raw: unknown, depth: number, where: string): MetadataFilter {
    if (depth > maxFilterDepth) throw new BadRequestError(`Filter nesting is deeper than ${maxFilterDepth} levels`);
    if (!isPlainObject(raw)) throw new BadRequestError(`${where} must be a filter object`);
    const entries = Object.entries(raw);
    if (entries.length === 0) throw new BadRequestError(`${where} must not be an empty filter object`);
    this.countNode();
    const parts: MetadataFilter[] = [];
    for (const [key, value] of entries) {
      if (key === '$and' || key === '$or') parts.push(this.parseList(key, value, depth));
      else if (key === '$not') parts.push({ kind: 'not', filter: this.parseObject(value, depth + 1, '$not') });
      else if (key.startsWith('$')) {
        throw new BadRequestError(
          `Unknown filter key "${key}": the combinators are $and, $or and $not, and operators go inside a field ({"field": {"$gt": 1}})`,
        );
      } else parts.push(...this.parseField(key, value));
    }
    return parts.length === 1 ? parts[0] : { kind: 'and', filters: parts };
  }

  private parseList(combinator: '$and' | '$or', raw: unknown, depth: number): MetadataFilter {
    if (!Array.isArray(raw) || raw.length === 0) throw new BadRequestError(`${combinator} needs a non-empty array of filters`);
    const filters = raw.map((item, index) => this.parseObject(item, depth + 1, `${combinator}[${index}]`));
    return { kind: combinator === '$and' ? 'and' : 'or', filters };
  }

  /** `"field": value` (equality) or `"field": {"$op": value, ...}` (several operators ANDed). */
  private parseField(field: string, raw: unknown): FieldFilter[] {
    assertEncodable(field, `Filter field "${field}"`);
    const path = metadataFieldPath(field);
    if (!path) throw new BadRequestError(`Filter field "${field}" has an empty path segment`);
    if (!isPlainObject(raw)) {
      this.countNode();
      return [{ kind: 'field', field, path, condition: { operator: '$eq', value: this.scalar(raw, field, '$eq') } }];
    }
    const operators = Object.entries(raw);
    if (operators.length === 0) throw new BadRequestError(`Filter on field "${field}" has no operators`);
    return operators.map(([operator, value]) => {
      this.countNode();
      return { kind: 'field', field, path, condition: this.parseCondition(field, operator, value) };
    });
  }

  private parseCondition(field: string, operator: string, value: unknown): FieldCondition {
    if (!fieldOperators.has(operator)) {
      if (!operator.startsWith('$')) {
        throw new BadRequestError(
          `Filter value of field "${field}" has the key "${operator}", which is not an operator: address nested fields with dots ("${field}.${operator}")`,
        );
      }
      throw new BadRequestError(`Unknown filter operator "${operator}" on field "${field}"`);
    }
    switch (operator) {
      case '$eq':
      case '$ne':
        return { operator, value: this.scalar(value, field, operator) };
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        if (typeof value === 'string') assertEncodable(value, 'Filter strings');
        else if (typeof value !== 'number') throw new BadRequestError(`Operator "${operator}" on field "${field}" needs a number or a string`);
        // Stored metadata holds no infinity (jsonb cannot), so such a bound could only match all or nothing.
        else if (!Number.isFinite(value)) throw beyondDouble(operator, field, value);
        return { operator, value };
      case '$in':
      case '$nin':
        if (!Array.isArray(value)) throw new BadRequestError(`Operator "${operator}" on field "${field}" needs an array`);
        return {
          operator,
          values: value.map((item) => {
            this.countNode();
            return this.scalar(item, field, operator);
          }),
        };
      default:
        if (typeof value !== 'boolean') throw new BadRequestError(`Operator "$exists" on field "${field}" needs true or false`);
        return { operator: '$exists', value };
    }
  }

  private scalar(value: unknown, field: string, operator: string): FilterScalar {
    if (value === Infinity || value === -Infinity) throw beyondDouble(operator, field, value);
    if (!isScalar(value)) {
      const hint = operator === '$eq' && Array.isArray(value) ? ' (use {"$in": [...]} to match any of several values)' : '';
      throw new BadRequestError(`Operator "${operator}" on field "${field}" takes a string, number, boolean or null${hint}`);
    }
    if (typeof value === 'string') assertEncodable(value, 'Filter strings');
    return value;
  }
}

/**
 * Validates a filter and converts it to a `MetadataFilter`. undefined, null and `{}` mean "no
 * filter" (undefined). Every mistake is a `BadRequestError` naming the field or key at fault.
 */
export function parseFilter(raw: unknown): MetadataFilter | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isPlainObject(raw)) throw new BadRequestError('Filter must be a JSON object');
  if (Object.keys(raw).length === 0) return undefined;
  return new FilterParser().parseObject(raw, 1, 'Filter');
}
