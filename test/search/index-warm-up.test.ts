/**
 * The in-process indexes (embedded vectors, memory keyword index) are loaded in the background at
 * start, most recently queried collection first, so the first query after a restart does not wait
 * for them; a collection that fails to load is logged and does not stop the others; with
 * INDEX_WARM_UP=false each collection loads at its first query, as before.
 *
 * That the BM25 index was loaded at start, not at the query, shows when a chunk's text is changed
 * behind the service's back after the start: an index loaded earlier still holds the old words.
 */
import type { Writable } from 'node:stream';
import t from 'tap';
import type { Config } from '../../src/config.js';
import { logLines } from '../support/log-lines.js';
import { multipartUpload, restartableTestApp, setupAdmin, testBackends, waitForIngestion, type TestApp } from '../support/test-app.js';

interface StorageEntry {
  collection: string;
  collection_id: string;
  memory_index?: { loaded: boolean; source?: string };
}

const MARKERS = { older: 'axolotl', recent: 'quokka', untouched: 'pangolin' } as const;
type Name = keyof typeof MARKERS;
const inProcessIndexes: Partial<Config> = { vectorStore: 'embedded', keywordIndex: 'memory' };

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const lives = await restartableTestApp(t, backend, 'rs-index-warm-up-');
    let current: TestApp | undefined;
    const restart = async (overrides: Partial<Config>, logStream?: Writable) => (current = await lives.restart({ ...inProcessIndexes, ...overrides }, logStream));

    let app = (await restart({})).app;
    const admin = { cookie: await setupAdmin(app) };
    const overview = async () => {
      const response = await app.inject({ method: 'GET', url: '/v1/admin/vector-storage', headers: admin });
      t.equal(response.statusCode, 200, response.body);
      return Object.fromEntries((response.json().data as StorageEntry[]).map((entry) => [entry.collection, entry.memory_index])) as Record<Name, StorageEntry['memory_index']>;
    };
    const found = async (name: Name, query: string) => {
      const response = await app.inject({
        method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload: { query, search_mode: 'keyword', skip_cache: true },
      });
      t.equal(response.statusCode, 200, response.body);
      return (response.json().results as unknown[]).length;
    };

    const ids = {} as Record<Name, string>;
    for (const name of ['untouched', 'older', 'recent'] as const) {
      const created = await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name } });
      t.equal(created.statusCode, 201, created.body);
      ids[name] = created.json().id;
      const upload = multipartUpload([{ filename: `${name}.txt`, content: `The ${MARKERS[name]} lives in the ${name} collection.`, contentType: 'text/plain' }]);
      t.equal((await app.inject({ method: 'POST', url: `/v1/collections/${name}/documents`, headers: { ...admin, ...upload.headers }, payload: upload.payload })).statusCode, 202);
      await waitForIngestion(app, name, admin);
    }
    t.equal(await found('older', MARKERS.older), 1);
    t.equal(await found('recent', MARKERS.recent), 1, 'queried last');

    await t.test('loaded at start, most recently queried first, without a query', async (t) => {
      const logs = logLines();
      app = (await restart({ warmUpIndexes: true }, logs.stream)).app;
      await current!.services.indexWarmUp.done();
      t.match(await overview(), {
        older: { loaded: true, source: 'snapshot' }, recent: { loaded: true, source: 'snapshot' }, untouched: { loaded: true, source: 'snapshot' },
      }, 'every graph is in memory, loaded from the snapshot saved at the stop');
      const loadOrder = logs.lines.filter((line) => line.msg === 'search indexes of a collection loaded').map((line) => (line as { collectionId?: string }).collectionId);
      t.same(loadOrder, [ids.recent, ids.older, ids.untouched], 'the collection queried last first; one never queried last');
      t.match(logs.lines.find((line) => line.msg === 'search indexes loaded'), { level: 30, collections: 3 }, 'a summary at info');

      await current!.services.sql("update chunks set text = 'The wombat replaced it.' where collection_id = ?", [ids.recent]);
      t.equal(await found('recent', MARKERS.recent), 1, 'the BM25 index was loaded before the text changed');
      t.equal(await found('recent', 'wombat'), 0, 'and does not hold the new text');
    });

    await t.test('INDEX_WARM_UP=false: each collection loads at its first query', async (t) => {
      app = (await restart({ warmUpIndexes: false })).app;
      await current!.services.indexWarmUp.done();
      t.same(await overview(), { older: { loaded: false }, recent: { loaded: false }, untouched: { loaded: false } }, 'nothing in memory');
      t.equal(await found('recent', MARKERS.recent), 0, 'the BM25 index loads at the query, from the changed text');
      t.equal(await found('recent', 'wombat'), 1);
      t.match((await overview()).recent, { loaded: false }, 'a keyword query loads no graph');
    });

    await t.test('a collection that fails to load is logged and the others still load', async (t) => {
      // A stored vector of another length makes the graph's load fail (see test/admin/vector-storage).
      await current!.services.sql("update embedded_vectors set embedding = 'AAAAAA==' where collection_id = ?", [ids.older]);
      const logs = logLines();
      app = (await restart({ warmUpIndexes: true }, logs.stream)).app;
      await current!.services.indexWarmUp.done();
      const failure = logs.lines.find((line) => line.msg === 'could not load the search indexes of a collection; its first query tries again');
      t.match(failure, { level: 40, collectionId: ids.older }, 'the failure is logged as a warning, naming the collection');
      const loaded = await overview();
      t.match(loaded, { recent: { loaded: true }, untouched: { loaded: true }, older: { loaded: false } }, 'the others are loaded');
      t.match(logs.lines.find((line) => line.msg === 'search indexes loaded'), { collections: 2 });
    });

    await t.test('a stop during the loads waits for the one in progress and loads no more', async (t) => {
      await restart({ warmUpIndexes: true });
      await lives.stop();
      t.pass('closed while loading');
    });
  });
}
