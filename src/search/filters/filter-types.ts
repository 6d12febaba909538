/**
 * A metadata filter in the language of api-contract section 3, validated by `parseFilter`:
 * `{"field": value}` is equality; operators `$eq $ne $gt $gte $lt $lte $in $nin $exists`;
 * combinators `$and $or $not`. Field names may be dotted paths into nested metadata.
 */
export type MetadataFilter = Record<string, unknown>;
