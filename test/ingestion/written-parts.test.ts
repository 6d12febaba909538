/**
 * What ingestion wrote of a document that ends failed, or waits for its retry, is taken back: no
 * chunk rows, no vectors, no keyword postings (nor their share of the BM25 statistics); its chunk
 * list is empty, no search mode finds it and the collection's stats do not count it. Before, a
 * large file killed three times while indexing ended failed with its 2,786 chunks found by every
 * query, and a retry that failed at parsing kept the chunks of the attempt handed back before it.
 *
 * Each attempt that writes is held after its last chunk is written (the collection's write version
 * is recorded then, before the document is marked ready) and never let go, as a process that
 * stopped there would. A crash is played by giving its job to a dead worker whose lease lapsed;
 * the workers are then stopped and started, and take the job over. A graceful stop hands the job
 * back; the retry then finds the original gone (a file unreadable on another replica).
 */
import t, { type Test } from 'tap';
import { ABANDONED_ON_LAST_ATTEMPT } from '../../src/ingestion/job-queue.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion, type TestApp } from '../support/test-app.js';

const DEAD_WORKER = 'crashed-host:4242:deadbeef';

/** Several chunks (chunk_size 400), each holding the document's own marker word. */
function documentText(marker: string): string {
  return Array.from({ length: 12 }, (_, index) =>
    `Section ${index} names ${marker}: cranes, containers and tides are scheduled together so the quay never idles; paragraph ${index} adds detail.`).join('\n\n');
}

/**
 * Holds the first ingestion run that writes to the collection after its chunks, vectors and keyword
 * postings are written, for good; resolves once one is held.
 */
function holdAfterEverythingIsWritten(services: TestApp['services'], collectionId: string): Promise<void> {
  const { collections } = services;
  const recordWrite = collections.recordWrite;
  return new Promise((entered) => {
    collections.recordWrite = async (sql, id) => {
      if (id !== collectionId) return recordWrite.call(collections, sql, id);
      collections.recordWrite = recordWrite;
      entered();
      return new Promise<void>(() => undefined);
    };
  });
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend, { workerConcurrency: 1 }, { startWorkers: false });
    const recordWrite = services.collections.recordWrite;
    t.teardown(() => { services.collections.recordWrite = recordWrite; });

    const upload = async (collection: string, marker: string) => {
      const body = multipartUpload([{ filename: `${marker}.txt`, content: documentText(marker), contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const document = async (collection: string, id: string) => (await app.inject({ url: `/v1/collections/${collection}/documents/${id}`, headers: admin })).json();
    const chunkTotal = async (collection: string, id: string) => (await app.inject({ url: `/v1/collections/${collection}/documents/${id}/chunks`, headers: admin })).json().total as number;
    const found = async (collection: string, query: string, mode: string) => ((await app.inject({
      method: 'POST', url: `/v1/collections/${collection}/query`, headers: admin, payload: { query, search_mode: mode, top_k: 50, skip_cache: true },
    })).json().results as Array<{ document_id: string }>).map((result) => result.document_id);
    const stats = async (collection: string) => (await app.inject({ url: `/v1/collections/${collection}/stats`, headers: admin })).json() as { chunks: number; vectors: number };

    /** Everything of the document written, searchable in every mode, before it goes wrong. */
    const everythingWritten = async (t: Test, collection: string, id: string, marker: string) => {
      t.ok(await chunkTotal(collection, id) > 1, 'several chunks listed');
      for (const mode of ['keyword', 'semantic', 'hybrid']) t.ok((await found(collection, marker, mode)).includes(id), `${mode}: found`);
      const { chunks, vectors } = await stats(collection);
      t.ok(chunks > 1 && vectors === chunks, `stats count them: ${chunks} chunks, ${vectors} vectors`);
    };
    /** Nothing of the document anywhere: listing, every search mode, stats, the keyword index's tables. */
    const nothingLeft = async (t: Test, collection: { id: string; name: string }, id: string, marker: string) => {
      t.equal(await chunkTotal(collection.name, id), 0, 'no chunk listed');
      for (const mode of ['keyword', 'semantic', 'hybrid']) t.notOk((await found(collection.name, marker, mode)).includes(id), `${mode}: not found`);
      t.same(await found(collection.name, marker, 'keyword'), [], 'keyword: nothing at all');
      t.match(await stats(collection.name), { chunks: 0, vectors: 0 }, 'stats count nothing');
      const [rows] = await services.sql<{ chunks: string | number; elements: string | number }>(
        'select (select count(*) from chunks where document_id = ?) as chunks, (select count(*) from document_elements where document_id = ?) as elements',
        [id, id],
      );
      t.same([Number(rows!.chunks), Number(rows!.elements)], [0, 0], 'no chunk or element rows');
      if (backend === 'postgresql') {
        // The SQL keyword index (the in-memory one of the embedded database is answered above).
        const [keyword] = await services.sql<{ postings: string | number; chunk_count: string | number | null }>(
          `select (select count(*) from keyword_postings where collection_id = ?) as postings,
             (select sum(chunk_count) from keyword_stats where collection_id = ?) as chunk_count`,
          [collection.id, collection.id],
        );
        t.same([Number(keyword!.postings), Number(keyword!.chunk_count ?? 0)], [0, 0], 'no keyword postings, BM25 statistics count no chunk');
      }
    };
    /** The process running the document's job dies: its job is a dead worker's, whose lease lapsed. */
    const crash = async (t: Test, id: string, attempts: 'last' | 'first') => {
      const updated = await services.sql(
        `update jobs set locked_by = ?, locked_at = now() - interval '10 minutes', attempts = ${attempts === 'last' ? 'max_attempts' : '1'}
         where document_id = ? and status = 'running' returning id`,
        [DEAD_WORKER, id],
      );
      t.equal(updated.length, 1, 'its job was running');
      // The held run is this process's: a stop would wait for it, then hand back what it still holds.
      await services.ingestion.stop(100);
    };

    await t.test('abandoned on its last attempt after its chunks were written: failed, and nothing of it stays', async (t) => {
      const collection = await createTestCollection(app, admin, { name: 'crashed', chunk_size: 400, chunk_overlap: 0 });
      const id = await upload('crashed', 'quillwort');
      const held = holdAfterEverythingIsWritten(services, collection.id);
      await services.start();
      await held;
      await everythingWritten(t, 'crashed', id, 'quillwort');

      await crash(t, id, 'last');
      await services.start();
      t.match(await document('crashed', id), { status: 'failed', error: `processing failed: ${ABANDONED_ON_LAST_ATTEMPT}`, chunk_count: 0 });
      await nothingLeft(t, collection, id, 'quillwort');
    });

    await t.test('abandoned before its last attempt: nothing of it while it waits, all of it once the retry is done', async (t) => {
      const collection = await createTestCollection(app, admin, { name: 'retried', chunk_size: 400, chunk_overlap: 0 });
      const id = await upload('retried', 'bladderwrack');
      const held = holdAfterEverythingIsWritten(services, collection.id);
      await services.start();
      await held;
      await everythingWritten(t, 'retried', id, 'bladderwrack');

      await crash(t, id, 'first');
      // The retry waits in parsing until let go, so that what the document holds meanwhile is seen.
      let letGo!: () => void;
      const parsingHeld = new Promise<void>((resolve) => { letGo = resolve; });
      let parsing!: () => void;
      const retryParsing = new Promise<void>((resolve) => { parsing = resolve; });
      const parses = services.parsers.map((parser) => parser.parse);
      for (const parser of services.parsers) {
        const parse = parser.parse;
        (parser as { parse: typeof parse }).parse = async (input) => {
          parsing();
          await parsingHeld;
          return parse(input);
        };
      }
      t.teardown(() => {
        for (const [index, parser] of services.parsers.entries()) (parser as { parse: typeof parses[number] }).parse = parses[index]!;
        letGo();
      });
      await services.start();
      await retryParsing;
      t.match(await document('retried', id), { status: 'processing', error: null, chunk_count: 0 }, 'the retry runs');
      await nothingLeft(t, collection, id, 'bladderwrack');

      letGo();
      const [ready] = await waitForIngestion(app, 'retried', admin);
      t.match(ready, { id, status: 'ready', error: null });
      t.equal(await chunkTotal('retried', id), ready!.chunk_count, 'its chunks written again');
      for (const mode of ['keyword', 'semantic', 'hybrid']) t.ok((await found('retried', 'bladderwrack', mode)).includes(id), `${mode}: found again`);
    });

    await t.test('handed back after its chunks were written, then failed at parsing on the retry: nothing of it stays', async (t) => {
      const collection = await createTestCollection(app, admin, { name: 'handed-back', chunk_size: 400, chunk_overlap: 0 });
      const id = await upload('handed-back', 'samphire');
      const held = holdAfterEverythingIsWritten(services, collection.id);
      await services.start();
      await held;
      await everythingWritten(t, 'handed-back', id, 'samphire');

      // A graceful stop: the held run's job goes back to the queue, its document back to pending.
      await services.ingestion.stop(100);
      t.match(await document('handed-back', id), { status: 'pending' });
      const lost = await services.sql('delete from document_originals where document_id = ? returning document_id', [id]);
      t.equal(lost.length, 1, 'the original (a row, being small) is gone');
      await services.start();
      await waitForIngestion(app, 'handed-back', admin);
      t.match(await document('handed-back', id), { status: 'failed', error: /^parsing failed: the original file is missing/, chunk_count: 0 });
      await nothingLeft(t, collection, id, 'samphire');
    });

    await t.test('a failed document that still holds chunks (its take-back failed, or it failed before take-backs existed) has them taken back at the next start', async (t) => {
      const collection = await createTestCollection(app, admin, { name: 'failed-holding', chunk_size: 400, chunk_overlap: 0 });
      const id = await upload('failed-holding', 'eelgrass');
      await services.start();
      t.match((await waitForIngestion(app, 'failed-holding', admin))[0], { id, status: 'ready' });
      await everythingWritten(t, 'failed-holding', id, 'eelgrass');

      await services.ingestion.stop(100);
      await services.sql(`update documents set status = 'failed', error = 'indexing failed: the database went away' where id = ?`, [id]);
      await services.start();
      t.match(await document('failed-holding', id), { status: 'failed', error: 'indexing failed: the database went away', chunk_count: 0 }, 'still failed, with its reason, counting no chunk');
      await nothingLeft(t, collection, id, 'eelgrass');
    });
  });
}
