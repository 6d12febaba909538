/**
 * Two replicas on one PostgreSQL database, writing the same raw-vector id or the same file at once
 * through the API. Each replica serialized only its own writes, so the other's interleaved: BM25
 * counted the chunk once per replica and two `replace` uploads each kept their copy. The embedded
 * database has one process, so these run on PostgreSQL only.
 */
import t from 'tap';
import pg from 'pg';
import { assertError } from '../support/assertions.js';
import { buildTestApp, createTestCollection, multipartUpload, setupAdmin, waitForIngestion, type TestApp } from '../support/test-app.js';
import { advisoryLockId, ReplicaKeyLocks, SESSION_NAME } from '../../src/concurrency/replica-key-locks.js';
import { DatabaseConnectionError, isDatabaseUnavailable } from '../../src/db/connection-failures.js';
import { freePort } from '../support/free-port.js';

const words = ['apple', 'banana', 'cherry', 'damson', 'elder', 'fig', 'grape', 'hazel'];

// pg 8 warns once per process when a client is sent a query while another runs on it; pg 9 throws.
// Hence a process of this file's own: another file's queries could have had that one warning.
const overlappingQueryWarnings: string[] = [];
process.on('warning', (warning) => {
  if (/already executing a query/.test(warning.message)) overlappingQueryWarnings.push(warning.message);
});

t.test('a lock session that cannot connect fails the write as the database being unavailable (503), not as an internal error', async (t) => {
  const locks = new ReplicaKeyLocks(`postgresql://app@127.0.0.1:${await freePort()}/retrieval`, { waitMs: 200, onSessionError: () => undefined });
  t.teardown(() => locks.close());
  let ran = false;
  const failure = await locks.run(['a key'], async () => { ran = true; }).catch((error: unknown) => error);
  t.type(failure, DatabaseConnectionError);
  t.match((failure as Error).message, /ECONNREFUSED/);
  t.ok(isDatabaseUnavailable(failure), 'which the error handler answers with 503 and Retry-After');
  t.equal(ran, false, 'the write did not run');
});

if (!process.env.TEST_DATABASE_URL) {
  t.pass('replicas need PostgreSQL (TEST_DATABASE_URL)');
} else {
  t.test('postgresql', async (t) => {
    const first = await buildTestApp('postgresql');
    let second: TestApp | undefined;
    t.teardown(async () => {
      await second?.close();
      await first.close();
    });
    second = await buildTestApp('postgresql', {}, { replicaOf: first.services.config.databaseUrl! });
    const admin = { cookie: await setupAdmin(first.app) };
    const replicas = [first.app, second.app];
    const databaseUrl = first.services.config.databaseUrl!;

    const upsert = (replica: number, collection: string, id: string, word: string, embedding: number[]) => replicas[replica]!.inject({
      method: 'POST', url: `/v1/collections/${collection}/vectors/upsert`, headers: admin,
      payload: { vectors: [{ id, embedding, text: `${word} raw text`, metadata: { word } }] },
    });

    await t.test('upserts of one raw-vector id through two replicas leave one text, counted once by BM25', async (t) => {
      const collection = await createTestCollection(first.app, admin, { name: 'raw', dimension: 4 });
      for (let round = 0; round < 5; round++) {
        const answers = await Promise.all(words.map((word, index) => upsert(index % 2, 'raw', 'shared', word, [1, index + 1, round + 1, 1])));
        t.same(answers.map((response) => response.statusCode), words.map(() => 200));
        const [row] = await first.services.sql<{ text: string }>("select text from chunks where id = 'shared'");
        const stored = row!.text.split(' ')[0]!;
        for (const word of words) {
          const response = await replicas[round % 2]!.inject({ method: 'POST', url: '/v1/collections/raw/query', headers: admin, payload: { query: word, search_mode: 'keyword', skip_cache: true } });
          t.same(response.json().results.map((result: { text: string }) => result.text), word === stored ? [row!.text] : [], `round ${round}: "${word}" finds the stored text only`);
        }
      }
      const [stats] = await first.services.sql<{ chunk_count: string }>('select chunk_count from keyword_stats where collection_id = ?', [collection.id]);
      t.equal(Number(stats!.chunk_count), 1, 'BM25 counts the one chunk once');
    });

    await t.test('uploads of one file through two replicas: replace leaves one copy, skip stores one', async (t) => {
      await createTestCollection(first.app, admin, { name: 'dupes' });
      const upload = (replica: number, onDuplicate: string, text: string) => {
        const body = multipartUpload([{ filename: 'same.txt', content: text, contentType: 'text/plain' }], { on_duplicate: onDuplicate });
        return replicas[replica]!.inject({ method: 'POST', url: '/v1/collections/dupes/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      };
      t.equal((await upload(0, 'skip', 'Lanterns hang on the quay.')).statusCode, 202);
      await waitForIngestion(first.app, 'dupes', admin);
      const replacing = await Promise.all(Array.from({ length: 6 }, (_, index) => upload(index % 2, 'replace', 'Lanterns hang on the quay.')));
      t.same(replacing.map((response) => response.statusCode), replacing.map(() => 202));
      const skipping = await Promise.all(Array.from({ length: 6 }, (_, index) => upload(index % 2, 'skip', 'Ropes lie coiled by the steps.')));
      t.same(skipping.map((response) => response.statusCode).sort(), [200, 200, 200, 200, 200, 202], 'one skip upload stores the new file, the others are answered with it');
      const documents = await waitForIngestion(first.app, 'dupes', admin);
      t.equal(documents.filter((document) => document.filename === 'same.txt').length, 2, 'one copy of each content is left');
      t.same(new Set(documents.map((document) => document.status)), new Set(['ready']));
    });

    await t.test('a write waits while another replica holds its id, then completes', async (t) => {
      const collection = await createTestCollection(first.app, admin, { name: 'held', dimension: 4 });
      const other = new pg.Client({ connectionString: databaseUrl });
      await other.connect();
      t.teardown(() => other.end());
      await other.query('select pg_advisory_lock($1)', [advisoryLockId(`vector:${collection.id}:busy`).toString()]);
      let settled = false;
      const waiting = upsert(1, 'held', 'busy', 'apple', [1, 2, 3, 4]).finally(() => { settled = true; });
      t.equal((await upsert(0, 'held', 'free', 'banana', [4, 3, 2, 1])).statusCode, 200, 'other ids are written meanwhile');
      await new Promise((resolve) => setTimeout(resolve, 300));
      t.equal(settled, false, 'the held id waits');
      await other.query('select pg_advisory_unlock_all()');
      t.equal((await waiting).statusCode, 200);
      const rows = await first.services.sql<{ id: string }>('select id from chunks where collection_id = ? order by id', [collection.id]);
      t.same(rows.map((row) => row.id), ['busy', 'free']);
    });

    await t.test('writes of many ids at once share the lock session one statement at a time', async (t) => {
      await createTestCollection(first.app, admin, { name: 'parallel', dimension: 4 });
      const answers = await Promise.all(Array.from({ length: 24 }, (_, index) => upsert(0, 'parallel', `id-${index}`, words[index % words.length]!, [1, index + 1, 2, 3])));
      t.same(answers.map((response) => response.statusCode), answers.map(() => 200));
      const [count] = await first.services.sql<{ count: string | number }>("select count(*) as count from chunks where collection_id = (select id from collections where name = 'parallel')");
      t.equal(Number(count!.count), 24);
      t.same(overlappingQueryWarnings, [], 'no query was sent to the lock session while another ran on it');
    });

    await t.test('a replica whose lock session was closed opens a new one', async (t) => {
      await createTestCollection(first.app, admin, { name: 'reconnect', dimension: 4 });
      t.equal((await upsert(0, 'reconnect', 'a', 'apple', [1, 2, 3, 4])).statusCode, 200);
      const [terminated] = await first.services.sql<{ count: string | number }>(
        'select count(pg_terminate_backend(pid)) as count from pg_stat_activity where application_name = ? and datname = current_database()', [SESSION_NAME],
      );
      t.equal(Number(terminated!.count), 2, "both replicas' lock sessions were closed");
      await new Promise((resolve) => setTimeout(resolve, 100));
      t.equal((await upsert(0, 'reconnect', 'a', 'banana', [1, 2, 3, 4])).statusCode, 200);
      t.equal((await upsert(1, 'reconnect', 'b', 'cherry', [1, 2, 3, 4])).statusCode, 200);
      const response = await first.app.inject({ method: 'POST', url: '/v1/collections/reconnect/query', headers: admin, payload: { query: 'banana cherry', search_mode: 'keyword', skip_cache: true } });
      t.same(response.json().results.map((result: { id: string }) => result.id).sort(), ['a', 'b']);
    });

    await t.test('writes, one of them refused, leave no advisory lock held', async (t) => {
      await createTestCollection(first.app, admin, { name: 'failing', dimension: 4 });
      assertError(t, await upsert(0, 'failing', 'x', 'apple', [1, 2, 3]), 400, /3 dimensions/);
      const body = multipartUpload([{ filename: 'a.txt', content: 'Tide tables.', contentType: 'text/plain' }], { on_duplicate: 'replace' });
      t.equal((await first.app.inject({ method: 'POST', url: '/v1/collections/failing/documents', headers: { ...admin, ...body.headers }, payload: body.payload })).statusCode, 202);
      const [held] = await first.services.sql<{ count: string | number }>("select count(*) as count from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())");
      t.equal(Number(held!.count), 0, 'no advisory lock is left held');
    });
  });

  t.test('the wait for ids another replica holds is bounded', async (t) => {
    const databaseUrl = process.env.TEST_DATABASE_URL!;
    const errors: Error[] = [];
    const locks = new ReplicaKeyLocks(databaseUrl, { waitMs: 200, onSessionError: (error) => errors.push(error) });
    const other = new ReplicaKeyLocks(databaseUrl, { waitMs: 200, onSessionError: (error) => errors.push(error) });
    t.teardown(async () => {
      await locks.close();
      await other.close();
    });
    const key = `test:${process.pid}:${Date.now()}`;
    let release!: () => void;
    let held!: () => void;
    const lockTaken = new Promise<void>((resolve) => { held = resolve; });
    // The work runs only once the lock is taken: waiting for it to start, not for a fixed time,
    // keeps a loaded machine from asking before the other replica holds the key.
    const holding = other.run([key], () => new Promise<void>((resolve) => {
      release = resolve;
      held();
    }));
    await lockTaken;
    await t.rejects(locks.run([key, 'another key'], async () => 'ran'), { status: 503, message: /^another replica has been writing the same content or vector ids for over 0.2 s/ }, 'refused after the wait');
    release();
    await holding;
    t.equal(await locks.run([key, 'another key'], async () => 'ran'), 'ran', 'taken once released');
    await t.rejects(other.run([key], async () => { throw new Error('the work failed'); }), /the work failed/);
    t.equal(await locks.run([key], async () => 'ran'), 'ran', 'released after work that failed');
    t.same(errors, []);
  });
}
