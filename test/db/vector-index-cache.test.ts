/**
 * VectorIndexCacheWatch: one warn line when pgvector's HNSW indexes outgrow shared_buffers, another
 * only once they have doubled since, and a new first warning after they fitted again. The sizes
 * reach `observe` as the periodic check reads them (readVectorIndexCache, whose figures the HTTP
 * test of /v1/stats checks against PostgreSQL's catalog).
 */
import t from 'tap';
import type { FastifyBaseLogger } from 'fastify';
import { VectorIndexCacheWatch } from '../../src/db/vector-index-cache.js';
import type { SqlRunner } from '../../src/plugins.js';

function recordingLogger() {
  const warnings: Array<{ fields: unknown; message: string }> = [];
  const logger = { warn: (fields: unknown, message: string) => warnings.push({ fields, message }) } as unknown as FastifyBaseLogger;
  return { logger, warnings };
}

const MB = 1_048_576;
const unusedSql = (() => Promise.reject(new Error('not read here'))) as unknown as SqlRunner;

t.test('warns when the indexes outgrow the cache, again when they double, and anew after fitting', async (t) => {
  const { logger, warnings } = recordingLogger();
  const watch = new VectorIndexCacheWatch(unusedSql, logger, 0);
  watch.observe({ index_bytes: 100 * MB, shared_buffers_bytes: 128 * MB });
  t.equal(warnings.length, 0, 'indexes that fit: nothing said');
  watch.observe({ index_bytes: 225 * MB, shared_buffers_bytes: 128 * MB });
  t.equal(warnings.length, 1, 'outgrown: one warning');
  t.equal(warnings[0]!.message, "pgvector's HNSW indexes take 225 MB, more than PostgreSQL's shared_buffers (128 MB): semantic searches read index pages from outside its cache and slow down; raise shared_buffers above the indexes' size");
  t.same(warnings[0]!.fields, { index_bytes: 225 * MB, shared_buffers_bytes: 128 * MB }, 'with both sizes as fields');
  watch.observe({ index_bytes: 300 * MB, shared_buffers_bytes: 128 * MB });
  watch.observe({ index_bytes: 449 * MB, shared_buffers_bytes: 128 * MB });
  t.equal(warnings.length, 1, 'growing, but not yet double: not repeated each round');
  watch.observe({ index_bytes: 450 * MB, shared_buffers_bytes: 128 * MB });
  t.equal(warnings.length, 2, 'doubled since the last warning: said again');
  watch.observe({ index_bytes: 450 * MB, shared_buffers_bytes: 1024 * MB });
  t.equal(warnings.length, 2, 'the cache raised: nothing said');
  watch.observe({ index_bytes: 1100 * MB, shared_buffers_bytes: 1024 * MB });
  t.equal(warnings.length, 3, 'outgrown again after fitting: a first warning again');
});

t.test('the first check comes at start, not an interval later', async (t) => {
  const { logger, warnings } = recordingLogger();
  const reads: string[] = [];
  const sql = (async (statement: string) => {
    reads.push(statement);
    return [{ index_bytes: String(225 * MB), shared_buffers_bytes: 128 * MB }];
  }) as unknown as SqlRunner;
  const watch = new VectorIndexCacheWatch(sql, logger, 3_600_000);
  watch.start();
  // stop() waits for the round in progress.
  await watch.stop();
  t.equal(reads.length, 1, 'the catalog is read once at start');
  t.equal(warnings.length, 1, 'and the warning is given then');
  t.match(warnings[0]!.message, /^pgvector's HNSW indexes take 225 MB, more than PostgreSQL's shared_buffers \(128 MB\)/);

  const off = new VectorIndexCacheWatch(sql, logger, 0);
  off.start();
  await off.stop();
  t.equal(reads.length, 1, 'an interval of 0 turns the check off, the first one too');
});
