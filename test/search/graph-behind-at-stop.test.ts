/**
 * A graph that has not taken in every row when the service stops: the stop does not wait for it
 * (after a large load that ran past the 25 s the process allows its stop, and the database was
 * not closed cleanly); it is not saved, the graphs that are current still are, and at the next
 * start that collection answers at once, every row included, while its graph is rebuilt behind.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Config } from '../../src/config.js';
import { graphThreadOf, holdInsertAnswers, stallGraphOfNextInsert } from '../support/graph-thread-control.js';
import { logLines } from '../support/log-lines.js';
import { multipartUpload, restartableTestApp, setupAdmin, testBackends, waitForIngestion, type TestApp } from '../support/test-app.js';
import { waitUntil } from '../support/wait-until.js';

interface MemoryIndex {
  loaded: boolean;
  source?: string;
  graph_usable?: boolean;
  rows_awaiting_graph?: number;
}

const embedded: Partial<Config> = { vectorStore: 'embedded', warmUpIndexes: false };

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const lives = await restartableTestApp(t, backend, 'rs-graph-behind-');
    let current: TestApp;
    const stopping = logLines();
    current = await lives.restart(embedded, stopping.stream);
    const admin = { cookie: await setupAdmin(current.app) };
    const memoryIndexOf = async (name: string): Promise<MemoryIndex> => {
      const response = await current.app.inject({ method: 'GET', url: '/v1/admin/vector-storage', headers: admin });
      t.equal(response.statusCode, 200, response.body);
      return (response.json().data as Array<{ collection: string; memory_index: MemoryIndex }>).find((entry) => entry.collection === name)!.memory_index;
    };
    const upload = async (collection: string, texts: string[]) => {
      const files = multipartUpload(texts.map((content, n) => ({ filename: `${collection}-${n}-${content.length}.txt`, content, contentType: 'text/plain' })));
      const response = await current.app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents/batch`, headers: { ...admin, ...files.headers }, payload: files.payload });
      t.equal(response.statusCode, 202, response.body);
      await waitForIngestion(current.app, collection, admin);
    };
    const semanticHits = async (collection: string, query: string) => {
      const response = await current.app.inject({ method: 'POST', url: `/v1/collections/${collection}/query`, headers: admin, payload: { query, search_mode: 'semantic', skip_cache: true } });
      t.equal(response.statusCode, 200, response.body);
      return (response.json().results as Array<{ text: string }>).map((result) => result.text);
    };

    for (const name of ['tide', 'anchor']) {
      t.equal((await current.app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name } })).statusCode, 201);
    }
    await upload('tide', ['High tide floods the lower quay twice a day.', 'Neap tides rise least in the harbour.', 'The tide table hangs by the harbour office.']);
    await upload('anchor', ['The anchor chain is checked before each voyage.']);
    for (const name of ['tide', 'anchor']) await waitUntil(async () => (await memoryIndexOf(name)).rows_awaiting_graph === 0, `${name}'s graph took in its rows`);

    // Tide's graph falls behind: the row of the next upload never reaches it.
    const held = stallGraphOfNextInsert(graphThreadOf(current.services.indexes.vectorStore));
    await upload('tide', ['A spring tide follows the full moon.']);
    t.match(await memoryIndexOf('tide'), { rows_awaiting_graph: 1 }, 'the new row awaits the graph');
    t.equal((await semanticHits('tide', 'spring tide full moon')).length, 4, 'and is searched meanwhile');

    current = await lives.restart(embedded);
    t.ok(held.includes('sync'), 'the stop asked whether tide\'s graph was current, and had no answer');
    t.match(stopping.lines.find((line) => line.msg?.startsWith('the vector graph had not taken in every row by the stop')), { level: 30, rowsAwaitingGraph: 1 }, 'the stop says why that graph was not saved');
    const ids = Object.fromEntries((await current.services.sql<{ name: string; id: string }>('select name, id from collections')).map((row) => [row.name, row.id]));
    const saved = readdirSync(path.join(lives.dataDir, 'vector-store'));
    t.same(saved.filter((file) => file.startsWith(ids.tide!)), [], 'no graph saved for tide');
    t.same(saved.filter((file) => file.startsWith(ids.anchor!)).sort(), [`${ids.anchor}.json`, `${ids.anchor}.usearch`], 'anchor\'s current graph was saved');

    // The next start: anchor's graph loads from its snapshot (and starts the graph thread); tide's
    // is rebuilt, and tide answers before the graph has taken in a single row.
    t.equal((await semanticHits('anchor', 'anchor chain')).length, 1);
    t.match(await memoryIndexOf('anchor'), { source: 'snapshot' });
    const heldInserts = holdInsertAnswers(graphThreadOf(current.services.indexes.vectorStore));
    const hits = await semanticHits('tide', 'spring tide full moon');
    t.equal(hits.length, 4, 'every row of tide is found while its graph is rebuilt');
    t.equal(hits[0], 'A spring tide follows the full moon.', 'the row the last graph never took in included');
    t.match(await memoryIndexOf('tide'), { loaded: true, source: 'rebuild', graph_usable: true, rows_awaiting_graph: 4 }, 'none of its rows in the graph yet');
    heldInserts.release();
    await waitUntil(async () => (await memoryIndexOf('tide')).rows_awaiting_graph === 0, 'the rebuilt graph took in every row');
    t.equal((await semanticHits('tide', 'spring tide full moon'))[0], 'A spring tide follows the full moon.');
  });
}
