/**
 * Through the API, writes that race: concurrent upserts of one raw-vector id, concurrent
 * `on_duplicate` uploads of one file, and a collection update while documents are written. On
 * PostgreSQL's pool these interleaved: the keyword index kept postings of the text that lost and
 * counted the chunk twice in BM25's statistics, `replace` uploads each kept their copy, and an
 * update wrote back a write version older than ingestion's, so answers cached before were served again.
 */
import t from 'tap';
import type { EntityManager } from '@mikro-orm/postgresql';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const words = ['apple', 'banana', 'cherry', 'damson', 'elder', 'fig', 'grape', 'hazel'];

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);

    await t.test('concurrent upserts of one raw-vector id leave one text, in the row and in the keyword index', async (t) => {
      await createTestCollection(app, admin, { name: 'raw', dimension: 4 });
      for (let round = 0; round < 5; round++) {
        const upserts = words.map((word, index) => app.inject({
          method: 'POST', url: '/v1/collections/raw/vectors/upsert', headers: admin,
          payload: { vectors: [{ id: 'shared', embedding: [1, index + 1, round + 1, 1], text: `${word} raw text`, metadata: { word } }] },
        }));
        t.same((await Promise.all(upserts)).map((response) => response.statusCode), words.map(() => 200));
        const [row] = await services.sql<{ text: string; key: string }>("select text, key from chunks where id = 'shared'");
        const stored = row!.text.split(' ')[0]!;
        for (const word of words) {
          const response = await app.inject({ method: 'POST', url: '/v1/collections/raw/query', headers: admin, payload: { query: word, search_mode: 'keyword', skip_cache: true } });
          const found = (response.json().results as Array<{ text: string; metadata: { word: string } }>).map((result) => [result.text, result.metadata.word]);
          t.same(found, word === stored ? [[row!.text, stored]] : [], `round ${round}: "${word}" finds the stored text only`);
        }
        const semantic = await app.inject({ method: 'POST', url: '/v1/collections/raw/query', headers: admin, payload: { query: 'x', search_mode: 'semantic', filters: { word: stored }, min_score: -1, skip_cache: true } });
        t.equal(semantic.json().results.length, 1, `round ${round}: the vector's metadata is the stored one`);
      }
      if (backend === 'postgresql') {
        const [stats] = await services.sql<{ chunk_count: string }>("select chunk_count from keyword_stats where collection_id = (select id from collections where name = 'raw')");
        t.equal(Number(stats!.chunk_count), 1, 'BM25 counts the one chunk once');
      }
    });

    await t.test('concurrent uploads of one file: replace leaves one copy, skip stores one', async (t) => {
      await createTestCollection(app, admin, { name: 'dupes' });
      const upload = (onDuplicate: string, text: string) => {
        const body = multipartUpload([{ filename: 'same.txt', content: text, contentType: 'text/plain' }], { on_duplicate: onDuplicate });
        return app.inject({ method: 'POST', url: '/v1/collections/dupes/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      };
      t.equal((await upload('skip', 'Lanterns hang on the quay.')).statusCode, 202);
      await waitForIngestion(app, 'dupes', admin);
      const replacing = await Promise.all(Array.from({ length: 6 }, () => upload('replace', 'Lanterns hang on the quay.')));
      t.same(replacing.map((response) => response.statusCode), replacing.map(() => 202));
      const skipping = await Promise.all(Array.from({ length: 6 }, () => upload('skip', 'Ropes lie coiled by the steps.')));
      t.same(skipping.map((response) => response.statusCode).sort(), [200, 200, 200, 200, 200, 202], 'one skip upload stores the new file, the others are answered with it');
      const documents = await waitForIngestion(app, 'dupes', admin);
      t.equal(documents.filter((document) => document.filename === 'same.txt').length, 2, 'one copy of each content is left');
      t.same(new Set(documents.map((document) => document.status)), new Set(['ready']));
    });

    await t.test('a document is ready only once answers cached before it are no longer served', async (t) => {
      await createTestCollection(app, admin, { name: 'fresh' });
      const upload = async (filename: string, text: string) => {
        const body = multipartUpload([{ filename, content: text, contentType: 'text/plain' }]);
        return (await app.inject({ method: 'POST', url: '/v1/collections/fresh/documents', headers: { ...admin, ...body.headers }, payload: body.payload })).json().id as string;
      };
      await upload('first.txt', 'Gulls circle the breakwater.');
      await waitForIngestion(app, 'fresh', admin);
      const findsLanterns = async () => {
        const response = await app.inject({ method: 'POST', url: '/v1/collections/fresh/query', headers: admin, payload: { query: 'lanterns', search_mode: 'keyword' } });
        return (response.json().results as unknown[]).length > 0;
      };
      t.equal(await findsLanterns(), false, 'an answer without the new document is cached');
      // Each time the collection's version is about to move, a client that saw the document ready asks again.
      const seen: Array<{ status: string; found: boolean }> = [];
      let watching = false;
      const recordWrite = services.collections.recordWrite.bind(services.collections);
      services.collections.recordWrite = async (sql, collectionId) => {
        if (watching) {
          const listed = (await app.inject({ url: '/v1/collections/fresh/documents', headers: admin })).json().data as Array<{ filename: string; status: string }>;
          const second = listed.find((document) => document.filename === 'second.txt');
          if (second) seen.push({ status: second.status, found: await findsLanterns() });
        }
        return recordWrite(sql, collectionId);
      };
      t.teardown(() => { services.collections.recordWrite = recordWrite; });
      watching = true;
      await upload('second.txt', 'Lanterns hang on the quay.');
      await waitForIngestion(app, 'fresh', admin);
      services.collections.recordWrite = recordWrite;
      t.ok(seen.length > 0, 'the version moved while the document was ingested');
      t.same(seen.filter((moment) => moment.status === 'ready' && !moment.found), [], 'never ready while the old answer is served');
      t.equal(await findsLanterns(), true);
    });

    await t.test('an update while documents are written never takes the write version back', async (t) => {
      await createTestCollection(app, admin, { name: 'versions' });
      const version = async () => Number((await services.sql<{ write_version: string }>("select write_version from collections where name = 'versions'"))[0]!.write_version);
      const before = await version();
      // Ingestion's writes land between the update's read of the collection and its write.
      const fork = services.db.fork.bind(services.db);
      services.db.fork = ((...args: Parameters<typeof fork>) => {
        const em = fork(...args) as EntityManager;
        const flush = em.flush.bind(em);
        em.flush = async () => {
          await services.sql("update collections set write_version = write_version + 5 where name = 'versions'");
          return flush();
        };
        return em;
      }) as typeof services.db.fork;
      t.teardown(() => { services.db.fork = fork; });
      const updated = await app.inject({ method: 'PATCH', url: '/v1/collections/versions', headers: admin, payload: { description: 'quay' } });
      services.db.fork = fork;
      t.equal(updated.statusCode, 200);
      t.equal(await version(), before + 6, 'the five concurrent writes and the update all count');
    });
  });
}
