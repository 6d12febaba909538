import { Type, type Static } from 'typebox';

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;

/** An offset past PostgreSQL's bigint was a database error (a 500); no list is longer than 2^31 - 1. */
export const MAX_PAGE_OFFSET = 2_147_483_647;

/** `limit` (default 50, max 500) and `offset` (default 0) of every list (api-contract 1). */
export const PageQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT }),
  offset: Type.Integer({ minimum: 0, maximum: MAX_PAGE_OFFSET, default: 0 }),
});
export type PageQuery = Static<typeof PageQuery>;

export function page<T>(data: T[], total: number, query: PageQuery) {
  return { data, total, limit: query.limit, offset: query.offset };
}
