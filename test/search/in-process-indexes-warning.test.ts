/**
 * KEYWORD_INDEX=memory and VECTOR_STORE=embedded keep indexes in the process: on PostgreSQL a second
 * replica never sees the other's writes to a collection it has loaded. A start with them on
 * PostgreSQL says so in the log; the defaults (on either database) say nothing.
 */
import t from 'tap';
import type { Config } from '../../src/config.js';
import { logLines } from '../support/log-lines.js';
import { buildTestApp, testBackends, type Backend } from '../support/test-app.js';

async function warningsOf(backend: Backend, overrides: Partial<Config>) {
  const log = logLines();
  const app = await buildTestApp(backend, overrides, { logStream: log.stream });
  await app.close();
  return log.lines.filter((line) => line.level === 40 && /keeps? search indexes in this process/.test(line.msg ?? ''));
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    t.same(await warningsOf(backend, {}), [], 'the defaults: no warning');
    if (backend === 'pglite') return;
    const [warning] = await warningsOf(backend, { keywordIndex: 'memory', vectorStore: 'embedded' });
    t.match(warning, {
      msg: /^KEYWORD_INDEX=memory and VECTOR_STORE=embedded keep search indexes in this process: run one replica on this database, or use KEYWORD_INDEX=sql and VECTOR_STORE=pgvector/,
      inProcessIndexes: ['KEYWORD_INDEX=memory', 'VECTOR_STORE=embedded'],
    });
    t.match(await warningsOf(backend, { keywordIndex: 'memory' }), [{ msg: /^KEYWORD_INDEX=memory keeps search indexes in this process/ }], 'one of them');
  });
}
