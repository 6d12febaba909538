/**
 * KEYWORD_INDEX=memory and VECTOR_STORE=embedded keep search indexes in the process: on PostgreSQL
 * one replica at a time may run with them (src/search/in-process-indexes-lock.ts). A second is
 * refused at start, saying why and what to do; replicas with the defaults start freely; the lock's
 * session, when lost, is taken again, and a replica that took it meanwhile is logged as an error.
 */
import pg from 'pg';
import t from 'tap';
import type { Config } from '../../src/config.js';
import { IN_PROCESS_INDEXES_LOCK_ID, InProcessIndexesInUseError, LOCK_SESSION_NAME } from '../../src/search/in-process-indexes-lock.js';
import { logLines, type LogLine } from '../support/log-lines.js';
import { buildTestApp, scratchDatabaseUrl } from '../support/test-app.js';

const inProcess: Partial<Config> = { keywordIndex: 'memory', vectorStore: 'embedded' };

async function lockSessions(url: string): Promise<Array<{ pid: number; holds: boolean }>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number; holds: boolean }>(
      `select a.pid, exists (select 1 from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.granted
                               and ((l.classid::bigint << 32) | l.objid::bigint) = $2::bigint) as holds
         from pg_stat_activity a where a.datname = current_database() and a.application_name = $1`,
      [LOCK_SESSION_NAME, IN_PROCESS_INDEXES_LOCK_ID.toString()],
    );
    return rows;
  } finally {
    await client.end();
  }
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const lineMatching = (lines: LogLine[], level: number, pattern: RegExp) => lines.find((line) => line.level === level && pattern.test(line.msg ?? ''));

if (!process.env.TEST_DATABASE_URL) {
  t.pass('PostgreSQL only (TEST_DATABASE_URL): the embedded database has one process by its own lock');
} else {
  t.test('a second replica with in-process indexes is refused while the first runs, and starts once it has stopped', async (t) => {
    const url = await scratchDatabaseUrl(t, { migrated: true });
    const log = logLines();
    const first = await buildTestApp('postgresql', inProcess, { replicaOf: url, logStream: log.stream });
    t.ok(lineMatching(log.lines, 30, /^KEYWORD_INDEX=memory and VECTOR_STORE=embedded keep search indexes in this process: this replica holds the database's lock/), 'the start says it holds the lock');
    t.same((await lockSessions(url)).map((session) => session.holds), [true], 'one session holds the lock');

    const refusal = await buildTestApp('postgresql', inProcess, { replicaOf: url }).then(async (app) => {
      await app.close();
      return undefined;
    }, (error: unknown) => error);
    t.type(refusal, InProcessIndexesInUseError);
    t.match((refusal as Error).message, new RegExp(
      '^KEYWORD_INDEX=memory and VECTOR_STORE=embedded keep search indexes in this process, and another replica on this database keeps them in its own '
      + `\\(session "${LOCK_SESSION_NAME}" from 127\\.0\\.0\\.1, connected since \\d{4}-\\d\\d-\\d\\dT[^)]+\\): each would miss the other's writes, so this one does not start\\. `
      + 'Run one replica on this database \\(on Kubernetes, a Deployment with strategy Recreate\\), or use KEYWORD_INDEX=sql and VECTOR_STORE=pgvector',
    ));
    await t.rejects(buildTestApp('postgresql', { keywordIndex: 'memory' }, { replicaOf: url }), { message: /^KEYWORD_INDEX=memory keeps search indexes in this process, and another replica/ }, 'one in-process index is enough to be refused');
    t.same((await lockSessions(url)).length, 1, 'the refused starts left no session behind');

    const shared = await buildTestApp('postgresql', {}, { replicaOf: url });
    t.pass('a replica with the defaults (KEYWORD_INDEX=sql, VECTOR_STORE=pgvector) starts beside it');
    await shared.close();

    await first.close();
    t.same(await lockSessions(url), [], 'the stop released the lock');
    const next = await buildTestApp('postgresql', inProcess, { replicaOf: url });
    t.same((await lockSessions(url)).map((session) => session.holds), [true], 'the next replica holds it');
    await next.close();
  });

  t.test('a lost lock session is taken again; a replica that took the lock meanwhile is logged as an error', async (t) => {
    const url = await scratchDatabaseUrl(t, { migrated: true });
    const log = logLines();
    const app = await buildTestApp('postgresql', { vectorStore: 'embedded' }, { replicaOf: url, logStream: log.stream });
    t.teardown(() => app.close());
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    t.teardown(() => admin.end());

    const [session] = await lockSessions(url);
    await admin.query('select pg_terminate_backend($1)', [session!.pid]);
    await waitFor('the retake', async () => {
      const sessions = await lockSessions(url);
      return sessions.length === 1 && sessions[0]!.pid !== session!.pid && sessions[0]!.holds ? true : undefined;
    });
    t.ok(lineMatching(log.lines, 40, /^the session holding the lock of the in-process search indexes ended; taking it again in 2 s$/), 'the loss is logged');
    t.ok(lineMatching(log.lines, 30, /^the lock of the in-process search indexes is held again$/), 'so is the retake');

    // Another replica (here, a plain session) takes the lock while this one has lost it.
    const [retaken] = await lockSessions(url);
    await admin.query('select pg_terminate_backend($1)', [retaken!.pid]);
    await admin.query('select pg_advisory_lock($1::bigint)', [IN_PROCESS_INDEXES_LOCK_ID.toString()]);
    const error = await waitFor('the error', () => lineMatching(log.lines, 50, /^another replica took the lock of the in-process search indexes/));
    t.match(error.msg, /VECTOR_STORE=embedded keeps search indexes in each process, and each misses the other's writes; stop one of them$/);
    await admin.query('select pg_advisory_unlock($1::bigint)', [IN_PROCESS_INDEXES_LOCK_ID.toString()]);
    await waitFor('the lock back', async () => ((await lockSessions(url))[0]?.holds ? true : undefined));
    t.equal(log.lines.filter((line) => line.level === 50).length, 1, 'the error is logged once, not at every attempt');
  });
}
