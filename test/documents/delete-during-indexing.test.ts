/**
 * A document deleted while its chunks are indexed, in the order that left index entries behind for
 * good (probe on PostgreSQL, two replicas: 28 vectors and 3 chunks' postings stayed after every
 * document was gone). The deletion removed the index entries first and the rows after; in between,
 * the ingestion wrote its entries and looked its rows up, found them, and kept the entries.
 *
 * The order is forced: the ingestion's keyword write waits until the deletion has removed index
 * entries, and the deletion then waits until the ingestion has finished (its last write-version bump
 * comes after the look-up). Deletions delete rows first now, so the same hooks find nothing left.
 * The deletion's call to the vector store is the first after it starts: the ingestion waits until
 * then. On PostgreSQL the deletion goes through a second replica without workers, as in the probe.
 */
import t from 'tap';
import { adminTestApp, buildTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const paragraphs = (count: number, tag: string) =>
  Array.from({ length: count }, (_, index) => `Capybara ${tag} ${index}: the capybara grazes by the river, capybara herds rest in the sun.`).join('\n\n');

/** A promise and the function that settles it. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => { resolve = settle; });
  return { promise, resolve };
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ingesting = await adminTestApp(t, backend);
    const { app, admin, services } = ingesting;
    let deleting = ingesting;
    if (backend === 'postgresql') {
      const replica = await buildTestApp(backend, {}, { replicaOf: services.config.databaseUrl!, startWorkers: false });
      t.teardown(() => replica.close());
      deleting = { ...ingesting, ...replica };
    }
    const upload = async (collection: string, filename: string, content: string) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };

    const name = 'deleted-mid-index';
    const collection = await createTestCollection(app, admin, { name, chunk_size: 100, chunk_overlap: 0, chunk_strategy: 'paragraph' });
    const { keywordIndex } = services.indexes;
    const { vectorStore } = deleting.services.indexes;
    const { collections } = services;
    const originals = { add: keywordIndex.add, delete: vectorStore.delete, recordWrite: collections.recordWrite };
    t.teardown(() => Object.assign(keywordIndex, { add: originals.add }));
    t.teardown(() => Object.assign(vectorStore, { delete: originals.delete }));
    t.teardown(() => Object.assign(collections, { recordWrite: originals.recordWrite }));

    const deletionRemovedEntries = signal();
    const ingestionFinished = signal();
    let deletion: Promise<{ statusCode: number; body: string }> | undefined;
    let deletionRemoving = false;
    vectorStore.delete = async (collectionId, keys) => {
      await originals.delete.call(vectorStore, collectionId, keys);
      if (!deletion || deletionRemoving) return;
      deletionRemoving = true;
      deletionRemovedEntries.resolve();
      await ingestionFinished.promise;
    };
    // The ingestion's last write-version bump; the deletion's own comes after its wait above.
    collections.recordWrite = async (sql, collectionId) => {
      if (deletionRemoving) ingestionFinished.resolve();
      return originals.recordWrite.call(collections, sql, collectionId);
    };
    keywordIndex.add = async (collectionId, entries) => {
      const [processing] = await services.sql<{ id: string }>("select id from documents where collection_id = ? and status = 'processing'", [collection.id]);
      if (!deletion && processing) {
        deletion = deleting.app.inject({ method: 'DELETE', url: `/v1/collections/${name}/documents/${processing.id}`, headers: admin });
        // Rows first (the fix): the deletion waits for nothing of ours and may have finished already.
        await Promise.race([deletionRemovedEntries.promise, deletion]);
      }
      return originals.add.call(keywordIndex, collectionId, entries);
    };

    await upload(name, 'doomed.txt', paragraphs(12, 'doomed'));
    await waitForIngestion(app, name, admin);
    t.ok(deletion, 'the deletion ran while the chunks were indexed');
    const deleted = await deletion!;
    t.equal(deleted.statusCode, 204, deleted.body);
    Object.assign(keywordIndex, { add: originals.add });
    Object.assign(vectorStore, { delete: originals.delete });
    Object.assign(collections, { recordWrite: originals.recordWrite });

    const stats = (await app.inject({ url: `/v1/collections/${name}/stats`, headers: admin })).json();
    t.match(stats, { documents: 0, chunks: 0, vectors: 0 }, 'nothing of the deleted document is counted, vectors included');
    if (backend === 'postgresql') {
      const [left] = await services.sql<{ vectors: string; postings: string; counted: string | null }>(
        `select (select count(*) from pgvector_embeddings where collection_id = ?) as vectors,
                (select count(*) from keyword_postings where collection_id = ?) as postings,
                (select sum(chunk_count) from keyword_stats where collection_id = ?) as counted`,
        [collection.id, collection.id, collection.id],
      );
      t.same({ vectors: Number(left!.vectors), postings: Number(left!.postings), counted: Number(left!.counted ?? 0) }, { vectors: 0, postings: 0, counted: 0 },
        'no vector row, posting or BM25 chunk count is left');
    }

    const live = [];
    for (const tag of ['north', 'south', 'east']) live.push(await upload(name, `${tag}.txt`, paragraphs(1, tag)));
    await waitForIngestion(app, name, admin);
    t.match((await app.inject({ url: `/v1/collections/${name}/stats`, headers: admin })).json(), { documents: 3, chunks: 3, vectors: 3 }, 'the live documents alone are counted');
    for (const mode of ['semantic', 'keyword', 'hybrid']) {
      const answer = (await app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload: { query: 'capybara river', search_mode: mode, top_k: 3, skip_cache: true } })).json();
      t.same(answer.results.map((result: { document_id: string }) => result.document_id).sort(), [...live].sort(), `${mode}: the three live documents fill the top 3`);
    }
  });
}
