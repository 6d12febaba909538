/**
 * GET /v1/admin/vector-storage, and what it shows of the embedded store's saved graphs: a graceful
 * restart loads the graph saved at shutdown instead of rebuilding it; a table that changed behind
 * the snapshot, an unreadable graph file or a graph saved in the old format (built by parallel
 * inserts) makes the store rebuild from the table, and queries answer from what the table holds;
 * a save that fails leaves nothing half-written that would stop the next load; a load that fails
 * (a stored vector of another length) is a 409 that leaves no graph behind.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import t from 'tap';
import { loadConfig, type Config } from '../../src/config.js';
import { adminTestApp, bearer, createApiKey, multipartUpload, restartableTestApp, setupAdmin, testBackends, waitForIngestion, type TestApp } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';
import { graphsHeld, graphThreadOf, holdInsertAnswers, killGraphThread } from '../support/graph-thread-control.js';
import { waitUntil } from '../support/wait-until.js';
import { logLines } from '../support/log-lines.js';

const TEXTS = [
  'Tide tables predict the harbour water level for every hour of the day.',
  'The lighthouse keeper logged storms, fog and passing ships each night.',
  'Container cranes unload the freighters while the tide is high.',
];

interface StorageEntry {
  collection: string;
  collection_id: string;
  vectors: number;
  memory_index?: { loaded: boolean; source?: string; load_seconds?: number; approximate_bytes?: number; graph_usable?: boolean; rows_awaiting_graph?: number };
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const lives = await restartableTestApp(t, backend, 'rs-vector-storage-');
    const { dataDir } = lives;
    let current: TestApp | undefined;
    const restart = async (overrides: Partial<Config> = {}, logStream?: Writable) => (current = await lives.restart(overrides, logStream));

    let app = (await restart()).app;
    const cookie = await setupAdmin(app);
    const admin = { cookie };
    const overview = async () => {
      const response = await app.inject({ method: 'GET', url: '/v1/admin/vector-storage', headers: admin });
      t.equal(response.statusCode, 200, response.body);
      return response.json() as { store: string; settings: Record<string, unknown>; data: StorageEntry[]; total: number; limit: number; offset: number };
    };
    /** A collection's in-memory index as the overview shows it. */
    const memoryIndexOf = async (name: string) => (await overview()).data.find((entry) => entry.collection === name)!.memory_index!;
    /** Where harbour's in-memory index came from at its last load: `snapshot` or `rebuild`. */
    const harbourSource = async () => (await memoryIndexOf('harbour')).source;
    const search = async () => {
      const response = await app.inject({ method: 'POST', url: '/v1/collections/harbour/query', headers: admin, payload: { query: 'tide harbour water', search_mode: 'semantic', skip_cache: true } });
      t.equal(response.statusCode, 200, response.body);
      return (response.json().results as Array<{ id: string }>).map((result) => result.id);
    };

    t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'harbour' } })).statusCode, 201);
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'empty-one' } })).statusCode, 201);
    for (const [n, text] of TEXTS.entries()) {
      const upload = multipartUpload([{ filename: `note-${n}.txt`, content: text, contentType: 'text/plain' }]);
      t.equal((await app.inject({ method: 'POST', url: '/v1/collections/harbour/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload })).statusCode, 202);
    }
    await waitForIngestion(app, 'harbour', admin);

    const first = await overview();
    t.equal(first.store, backend === 'postgresql' ? 'pgvector' : 'embedded');
    t.same(first.settings, backend === 'postgresql'
      ? { ef_search: 100, iterative_scan: 'relaxed_order' }
      : { connectivity: 16, expansion_add: 64, expansion_search: 128, graph_quantization: 'f16', exact_search_below: 5000 }, 'the store shows its search settings');
    t.same(first.data.map((entry) => [entry.collection, entry.vectors]), [['empty-one', 0], ['harbour', 3]], 'every collection with its vector count, by name');
    t.equal(first.total, 2);
    const paged = await app.inject({ method: 'GET', url: '/v1/admin/vector-storage?limit=1&offset=1', headers: admin });
    t.same(paged.json().data.map((entry: StorageEntry) => entry.collection), ['harbour'], 'limit and offset page the list');
    assertError(t, await app.inject({ method: 'GET', url: '/v1/admin/vector-storage?limit=0', headers: admin }), 400, /limit/);
    const { key } = await createApiKey(app, cookie, { name: 'reader', scopes: ['collection:read'] });
    assertError(t, await app.inject({ method: 'GET', url: '/v1/admin/vector-storage', headers: bearer(key) }), 403);

    if (backend === 'postgresql') {
      t.notOk(first.data[1]!.memory_index, 'pgvector keeps no index in process memory');
      return;
    }
    const harbourIndex = first.data[1]!.memory_index!;
    t.equal(harbourIndex.loaded, true);
    t.equal(harbourIndex.source, 'rebuild', 'a collection first loaded in this life was built from the table');
    t.ok(harbourIndex.approximate_bytes! > 3 * 384 * 4, 'memory estimate covers the rows');
    await waitUntil(async () => (await memoryIndexOf('harbour')).rows_awaiting_graph === 0, "the graph took in harbour's rows");
    t.match(await memoryIndexOf('harbour'), { graph_usable: true, rows_awaiting_graph: 0 });
    const before = await search();
    t.equal(before.length, 3);

    // Inserts the graph has not taken in yet are counted, and searched: the graph's answers are held back.
    const heldInserts = holdInsertAnswers(graphThreadOf(current!.services.indexes.vectorStore));
    const buoyNotes = multipartUpload(['The buoy bell rings in the swell.', 'A green buoy marks the channel.'].map((content, n) => ({ filename: `buoy-${n}.txt`, content, contentType: 'text/plain' })));
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'buoy' } })).statusCode, 201);
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections/buoy/documents/batch', headers: { ...admin, ...buoyNotes.headers }, payload: buoyNotes.payload })).statusCode, 202);
    await waitForIngestion(app, 'buoy', admin);
    t.match(await memoryIndexOf('buoy'), { graph_usable: true, rows_awaiting_graph: 2 }, 'both rows await the graph');
    const buoySearch = await app.inject({ method: 'POST', url: '/v1/collections/buoy/query', headers: admin, payload: { query: 'buoy', search_mode: 'semantic', skip_cache: true } });
    t.equal(buoySearch.json().results.length, 2, 'and are found meanwhile');
    heldInserts.release();
    await waitUntil(async () => (await memoryIndexOf('buoy')).rows_awaiting_graph === 0, 'the graph took in the held rows');

    // A graceful restart, with another search breadth (it does not shape the graph): the graph saved
    // at shutdown is loaded, not rebuilt, and searches with the new breadth.
    app = (await restart({ hnswExpansionSearch: 200 })).app;
    const restarted = await overview();
    t.same(restarted.data.find((entry) => entry.collection === 'harbour')!.memory_index, { loaded: false }, 'nothing loads before first use');
    t.equal(restarted.settings.expansion_search, 200);
    t.same(await search(), before, 'the same answers after a restart');
    t.equal(await harbourSource(), 'snapshot');
    const harbourId = first.data[1]!.collection_id;
    const snapshotFiles = () => readdirSync(path.join(dataDir, 'vector-store')).filter((file) => file.startsWith(harbourId));
    t.same(snapshotFiles(), [], 'a snapshot is used once: taking it removes it');

    // The table changed behind the saved graph: the snapshot is refused and the store rebuilds.
    app = (await restart()).app;
    const [removed] = await current!.services.sql<{ chunk_key: string | number }>('delete from embedded_vectors where chunk_key = (select min(chunk_key) from embedded_vectors) returning chunk_key');
    const afterDelete = await search();
    t.equal(afterDelete.length, 2, 'the vector deleted behind the snapshot is not found');
    const harbour = (await overview()).data.find((entry) => entry.collection === 'harbour')!;
    t.equal(harbour.memory_index!.source, 'rebuild', `key ${removed!.chunk_key} missing from the table: snapshot refused`);
    t.equal(harbour.vectors, 2);

    // An unreadable graph file next to a valid manifest: rebuilt, answers intact.
    app = (await restart()).app;
    t.same(snapshotFiles().sort(), [`${harbourId}.json`, `${harbourId}.usearch`], 'a graph was saved at the last shutdown');
    writeFileSync(path.join(dataDir, 'vector-store', `${harbourId}.usearch`), 'not a usearch graph');
    t.same(await search(), afterDelete, 'the same answers from a rebuilt graph');
    t.equal(await harbourSource(), 'rebuild');

    // A graph saved by a version whose inserts ran on several threads (manifest format 1): such a
    // graph can hold rows no search reaches, so it is rebuilt rather than loaded.
    app = (await restart()).app;
    const manifestFile = path.join(dataDir, 'vector-store', `${harbourId}.json`);
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { format: number };
    t.equal(manifest.format, 2, 'graphs are saved as format 2');
    writeFileSync(manifestFile, JSON.stringify({ ...manifest, format: 1 }));
    t.same(await search(), afterDelete);
    t.equal(await harbourSource(), 'rebuild', 'a format 1 graph is not loaded');

    // The graph thread dies: its death is logged, searches still answer, the graph it held is not
    // saved at the stop (it would load at the next start as if whole), and the next start rebuilds.
    const dying = logLines();
    app = (await restart({}, dying.stream)).app;
    t.equal((await search()).length, afterDelete.length);
    await killGraphThread(graphThreadOf(current!.services.indexes.vectorStore));
    t.equal((await search()).length, afterDelete.length, 'searches answer after the thread died');
    t.equal((await memoryIndexOf('harbour')).graph_usable, false, 'the graph is shown as not usable');
    t.ok(dying.lines.some((line) => line.level === 40 && /graph thread stopped/.test(line.msg ?? '')), 'the death is logged');
    app = (await restart()).app;
    t.same(snapshotFiles(), [], 'no graph saved for a collection whose graph thread died');
    t.equal((await search()).length, afterDelete.length);
    t.equal(await harbourSource(), 'rebuild');

    // Two collections loaded; saving one graph fails (its file cannot be written): the stop logs it
    // and goes on, the other graph is saved, and nothing half-saved is left to load.
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'pier' } })).statusCode, 201);
    const pierNote = multipartUpload([{ filename: 'pier.txt', content: 'The pier lights are checked before the ferry leaves.', contentType: 'text/plain' }]);
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections/pier/documents', headers: { ...admin, ...pierNote.headers }, payload: pierNote.payload })).statusCode, 202);
    await waitForIngestion(app, 'pier', admin);
    const searchPier = async () => (await app.inject({ method: 'POST', url: '/v1/collections/pier/query', headers: admin, payload: { query: 'pier lights', search_mode: 'semantic', skip_cache: true } })).json().results.length as number;
    const saving = logLines();
    app = (await restart({}, saving.stream)).app;
    t.equal((await search()).length, afterDelete.length);
    t.equal(await searchPier(), 1);
    mkdirSync(path.join(dataDir, 'vector-store', `${harbourId}.usearch.partial`));
    app = (await restart()).app;
    t.ok(saving.lines.some((line) => line.level === 40 && /could not save the vector graph/.test(line.msg ?? '')), 'the failed save is logged');
    t.same(snapshotFiles(), [`${harbourId}.usearch.partial`], 'no manifest and no graph file for the graph that failed');
    t.equal(await searchPier(), 1);
    const after = (await overview()).data;
    t.equal(after.find((entry) => entry.collection === 'pier')!.memory_index!.source, 'snapshot', 'the other graph was saved and loaded');
    t.equal((await search()).length, afterDelete.length);
    t.equal(await harbourSource(), 'rebuild');

    // A save that fails after writing the graph (a directory holds the graph's place, so the
    // written file cannot be renamed into it): the written file is removed, the failure logged, and
    // the next start rebuilds despite the directory.
    const vectorStoreDir = path.join(dataDir, 'vector-store');
    rmSync(path.join(vectorStoreDir, `${harbourId}.usearch.partial`), { recursive: true });
    const renaming = logLines();
    app = (await restart({}, renaming.stream)).app;
    t.equal((await search()).length, afterDelete.length);
    mkdirSync(path.join(vectorStoreDir, `${harbourId}.usearch`, 'occupied'), { recursive: true });
    app = (await restart()).app;
    t.ok(renaming.lines.some((line) => line.level === 40 && /could not save the vector graph/.test(line.msg ?? '')), 'the failed rename is logged');
    t.same(snapshotFiles(), [`${harbourId}.usearch`], 'the written graph file is gone; only the directory in its place stays');
    t.equal((await search()).length, afterDelete.length, 'the collection loads despite the directory');
    t.equal(await harbourSource(), 'rebuild');
    rmSync(path.join(vectorStoreDir, `${harbourId}.usearch`), { recursive: true });

    // A stored vector of another length: loading the collection fails (409, the same on a retry),
    // and each failed load drops the empty graph it made instead of leaving it on the thread.
    app = (await restart()).app;
    const graphs = graphThreadOf(current!.services.indexes.vectorStore);
    t.equal(await searchPier(), 1);
    const heldBefore = graphsHeld(graphs);
    await current!.services.sql(`update embedded_vectors set embedding = 'AAAAAA==' where chunk_key = (select min(chunk_key) from embedded_vectors e join collections c on c.id = e.collection_id where c.name = 'harbour')`);
    for (let attempt = 0; attempt < 3; attempt++) {
      const failed = await app.inject({ method: 'POST', url: '/v1/collections/harbour/query', headers: admin, payload: { query: 'tide harbour water', search_mode: 'semantic', skip_cache: true } });
      assertError(t, failed, 409, /does not have 384 dimensions/);
    }
    t.equal(graphsHeld(graphs), heldBefore, 'no graph left behind by the three failed loads');
    t.equal(await searchPier(), 1, 'the other collection still answers');
  });
}

t.test('EMBEDDED_HNSW_EXPANSION_SEARCH sets the embedded store\'s search breadth; a bad value stops the start', async (t) => {
  t.equal(loadConfig({ EMBEDDED_HNSW_EXPANSION_SEARCH: '200' }).hnswExpansionSearch, 200);
  t.equal(loadConfig({}).hnswExpansionSearch, undefined, 'unset: the store keeps its default');
  t.throws(() => loadConfig({ EMBEDDED_HNSW_EXPANSION_SEARCH: '0' }), /EMBEDDED_HNSW_EXPANSION_SEARCH must be an integer >= 1/);
  t.throws(() => loadConfig({ EMBEDDED_HNSW_EXPANSION_SEARCH: 'wide' }), /EMBEDDED_HNSW_EXPANSION_SEARCH/);
  const { app, admin } = await adminTestApp(t, 'pglite', { hnswExpansionSearch: 200 });
  const response = await app.inject({ method: 'GET', url: '/v1/admin/vector-storage', headers: admin });
  t.equal(response.statusCode, 200, response.body);
  t.equal(response.json().settings.expansion_search, 200);
});
