/**
 * Query events are kept QUERY_EVENTS_RETENTION_DAYS (expired-records-sweep.ts); their counts stay
 * in the daily totals and the daily counts of each query text, so analytics (top and zero-result
 * lists included) and the usage report still count the older queries. Analytics windows are UTC
 * days, today included.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { QUERY_TEXTS_KEPT_PER_DAY } from '../../src/search/query-daily-texts.js';
import { recordQueries } from '../support/recorded-queries.js';
import { adminTestApp, createTestCollection, testBackends, type TestApp } from '../support/test-app.js';

const DAY_MS = 86_400_000;

const foldedKey = (text: string) => createHash('md5').update(text.toLowerCase()).digest('hex');

/** The text whose folded key (migration 0026) sorts last: cut first when ties go by key alone. */
const lastByFoldedKey = (texts: string[]) => [...texts].sort((a, b) => foldedKey(b).localeCompare(foldedKey(a)))[0]!;

/** The UTC midnight `days` before today's, plus `offsetMs`. */
function dayBefore(days: number, offsetMs = 0): Date {
  return new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS - days * DAY_MS + offsetMs);
}

/** A query of 4 ms at `at`, recorded as the query path does. */
const recordQuery = (services: TestApp['services'], collectionId: string, query: string, at: Date, resultCount = 1) =>
  recordQueries(services, collectionId, [[query, resultCount]], at, 4);

async function storedTextsOfDay(services: TestApp['services'], collectionId: string, day: Date): Promise<number> {
  const [row] = await services.sql<{ count: number }>(
    'select count(*)::int as count from query_daily_texts where collection_id = ? and day = ?::date', [collectionId, day.toISOString().slice(0, 10)],
  );
  return row!.count;
}

async function storedEvents(services: TestApp['services'], collectionId: string): Promise<string[]> {
  const rows = await services.sql<{ query: string }>('select query from query_events where collection_id = ? order by created_at', [collectionId]);
  return rows.map((row) => row.query);
}

for (const backend of testBackends()) {
  t.test(`${backend}: events past the retention are deleted, their counts kept`, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend, { queryEventsRetentionDays: 3 });
    const { id } = await createTestCollection(app, admin, { name: 'harbour' });
    await recordQuery(services, id, 'tide tables', dayBefore(10, 12 * 3_600_000));
    await recordQuery(services, id, 'tide tables', dayBefore(5, 3_600_000), 0);
    await recordQuery(services, id, 'berth fees', dayBefore(5, 3_600_000));
    // Through the API: an empty collection, so a zero-result query.
    const response = await app.inject({ method: 'POST', url: '/v1/collections/harbour/query', headers: admin, payload: { query: 'pilot boarding', skip_cache: true } });
    t.equal(response.statusCode, 200, response.body);
    await services.queryRuntime.events.flushBeforeRead();

    t.equal((await services.expiredRecordsSweep.sweep()).query_events, 3, 'the three events older than three days are deleted');
    t.same(await storedEvents(services, id), ['pilot boarding'], 'today\'s event is kept');
    t.equal((await services.expiredRecordsSweep.sweep()).query_events, 0, 'a second round finds nothing');

    const analytics = (await app.inject({ url: '/v1/collections/harbour/analytics?window_days=30', headers: admin })).json();
    t.match(analytics, { window_days: 30, queries_total: 4, zero_result_queries_total: 2 }, 'the totals still count the deleted events');
    t.same(analytics.queries_per_day.map((day: { date: string; queries: number }) => [day.date, day.queries]), [
      [dayBefore(10).toISOString(), 1], [dayBefore(5).toISOString(), 2], [dayBefore(0).toISOString(), 1],
    ], 'each UTC day keeps its count');
    const todayLatency = analytics.queries_per_day[2].avg_latency_ms as number;
    t.ok(Math.abs(analytics.avg_latency_ms - (4 * 3 + todayLatency) / 4) < 0.01, 'the average latency weighs every query of the window, deleted events included');
    t.same(analytics.top_queries.map((row: { query: string; count: number; avg_results: number }) => [row.query, row.count, row.avg_results]),
      [['tide tables', 2, 0.5], ['berth fees', 1, 1], ['pilot boarding', 1, 0]], 'the query lists count the deleted events too');
    t.same(analytics.zero_result_queries.map((row: { query: string; count: number }) => [row.query, row.count]), [['pilot boarding', 1], ['tide tables', 1]]);

    const usage = (await app.inject({ url: '/v1/usage?window_days=7', headers: admin })).json();
    t.equal(usage.queries_total, 3, 'the usage report counts the queries of its window from the totals (the 10-day-old one is outside)');
    t.equal(usage.timeline.find((day: { date: string }) => day.date === dayBefore(5).toISOString()).queries, 2);

    const short = (await app.inject({ url: '/v1/collections/harbour/analytics?window_days=2', headers: admin })).json();
    t.match(short, { queries_total: 1 });
    t.same(short.top_queries.map((row: { query: string }) => row.query), ['pilot boarding'], 'the lists cover the window');

    // Today "Pilot Boarding" is asked 3 times, once with no result; "pilot boarding" twice, both with none.
    await recordQueries(services, id, [['Pilot  Boarding', 1], ['Pilot Boarding', 1], ['Pilot Boarding', 0], ['pilot boarding', 0]], new Date());
    const today = (await app.inject({ url: '/v1/collections/harbour/analytics?window_days=1', headers: admin })).json();
    t.same(today.top_queries.map((row: { query: string; count: number }) => [row.query, row.count]), [['Pilot Boarding', 5]], 'a query is shown in the form asked most often');
    t.same(today.zero_result_queries, [{ query: 'pilot boarding', count: 3 }], 'its zero-result count in the form asked most often with no result');
  });

  t.test(`${backend}: analytics windows are UTC days, today included; a retention of 0 keeps every event`, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend, { queryEventsRetentionDays: 0 });
    const { id } = await createTestCollection(app, admin, { name: 'archive' });
    await recordQuery(services, id, 'first light', dayBefore(6, 60_000));
    await recordQuery(services, id, 'last light', dayBefore(7, DAY_MS - 60_000), 0);
    t.equal((await services.expiredRecordsSweep.sweep()).query_events, 0);
    t.same(await storedEvents(services, id), ['last light', 'first light']);

    const week = (await app.inject({ url: '/v1/collections/archive/analytics?window_days=7', headers: admin })).json();
    t.match(week, { queries_total: 1 }, 'a 7-day window is today and the six UTC days before: six days back is in, seven is not');
    t.same(week.top_queries.map((row: { query: string }) => row.query), ['first light']);
    const eight = (await app.inject({ url: '/v1/collections/archive/analytics?window_days=8', headers: admin })).json();
    t.match(eight, { queries_total: 2, zero_result_queries_total: 1 });
    t.same(eight.zero_result_queries.map((row: { query: string }) => row.query), ['last light']);
  });

  t.test(`${backend}: expired events go in batches, and at start`, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend, { queryEventsRetentionDays: 1 }, { startWorkers: false });
    const { id } = await createTestCollection(app, admin, { name: 'busy' });
    await services.sql(
      `insert into query_events (id, collection_id, query, search_mode, result_count, latency_ms, cached, created_at)
       select gen_random_uuid(), ?, 'q' || n, 'keyword', 1, 1, false, now() - interval '2 days' - n * interval '1 second'
         from generate_series(1, 12000) as n`, [id],
    );
    await recordQuery(services, id, 'kept', new Date());
    await services.start();
    for (let waited = 0; (await storedEvents(services, id)).length > 1 && waited < 30_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.same(await storedEvents(services, id), ['kept'], 'the start\'s round deleted 12,000 expired events, more than one batch');
  });

  t.test(`${backend}: a past day keeps its most asked query texts, today every text; the texts go after 365 days`, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend, { queryEventsRetentionDays: 0 });
    const { id } = await createTestCollection(app, admin, { name: 'port' });
    const pastDay = dayBefore(2, 3_600_000);
    // More texts asked once than a past day keeps; 'zz rare miss' had no result.
    const tail = Array.from({ length: QUERY_TEXTS_KEPT_PER_DAY + 100 }, (_, n): [string, number] => [`tail ${String(n).padStart(4, '0')}`, 3]);
    const popular: Array<[string, number]> = [
      ...Array.from({ length: 5 }, (): [string, number] => ['popular one', 2]),
      ['Popular Two', 4], ['popular  two', 4], ['popular two ', 4], ['popular two', 4],
    ];
    await recordQueries(services, id, [...popular, ...tail, ['zz rare miss', 0]], pastDay);
    await recordQueries(services, id, tail, new Date());
    // Tied with the rest of the tail on the past day, last of them by folded key, but asked more today:
    // ranked by its asks on every day, the past day keeps it.
    const favoured = lastByFoldedKey(tail.map(([query]) => query).filter((query) => query !== `tail ${QUERY_TEXTS_KEPT_PER_DAY + 99}`));
    await recordQueries(services, id, [[favoured, 3], [favoured, 3], [favoured, 3]], new Date());
    const keys = 2 + tail.length + 1;
    t.equal(await storedTextsOfDay(services, id, pastDay), keys + 1, 'a text is kept per form asked (white space apart): "Popular Two" and "popular two"');

    const swept = await services.expiredRecordsSweep.sweep();
    // Kept: the 500 most asked (both popular queries, in three rows, and 498 of the tail, ties going by
    // asks on every day, then by folded key) and the most asked zero-result one.
    t.equal(swept.query_texts, keys - QUERY_TEXTS_KEPT_PER_DAY - 1, 'the past day\'s least asked texts are deleted');
    t.equal(await storedTextsOfDay(services, id, pastDay), QUERY_TEXTS_KEPT_PER_DAY + 2);
    t.equal(await storedTextsOfDay(services, id, new Date()), tail.length, 'today keeps every text');
    t.equal((await services.expiredRecordsSweep.sweep()).query_texts, 0, 'a day is cut once');

    const analytics = (await app.inject({ url: '/v1/collections/port/analytics', headers: admin })).json();
    t.match(analytics, { queries_total: popular.length + 2 * tail.length + 3 + 1, zero_result_queries_total: 1 }, 'the totals count every query');
    const listed = analytics.top_queries.map((row: { query: string; count: number; avg_results: number }) => [row.query, row.count, row.avg_results]);
    t.same(listed.slice(0, 3), [['popular one', 5, 2], [favoured, 5, 3], ['popular two', 4, 4]],
      'the most asked are counted in full, shown in the form asked most often; the favoured tail text\'s past day counts');
    t.equal(listed.length, 20);
    t.same(listed.slice(3).filter(([query, count, results]: [string, number, number]) => /^tail \d{4}$/.test(query) && count === 2 && results === 3).length, 17,
      'the rest are tail texts the past day kept, counted on both days');
    t.same(analytics.zero_result_queries, [{ query: 'zz rare miss', count: 1 }], 'a zero-result query is kept by its own list');
    const yesterday = (await app.inject({ url: '/v1/collections/port/analytics?window_days=1', headers: admin })).json();
    t.same(yesterday.top_queries.slice(0, 2).map((row: { count: number }) => row.count), [4, 1], 'today\'s counts alone in a one-day window');

    // An event of the past day recorded late (a batch kept while the database was away) has it cut again.
    await recordQueries(services, id, [[`tail ${QUERY_TEXTS_KEPT_PER_DAY + 99}`, 3]], pastDay);
    t.equal(await storedTextsOfDay(services, id, pastDay), QUERY_TEXTS_KEPT_PER_DAY + 3);
    t.equal((await services.expiredRecordsSweep.sweep()).query_texts, 1);
    t.equal(await storedTextsOfDay(services, id, pastDay), QUERY_TEXTS_KEPT_PER_DAY + 2);

    const longAgo = dayBefore(365, 3_600_000);
    await recordQueries(services, id, [['long ago', 1]], longAgo);
    await recordQueries(services, id, [['within the year', 0]], dayBefore(364, 3_600_000));
    t.equal((await services.expiredRecordsSweep.sweep()).query_texts, 1, 'the texts of the day before the longest window are deleted');
    t.equal(await storedTextsOfDay(services, id, longAgo), 0);
    t.equal(await storedTextsOfDay(services, id, dayBefore(364)), 1, 'the first day of a 365-day window keeps its texts');
    const year = (await app.inject({ url: '/v1/collections/port/analytics?window_days=365', headers: admin })).json();
    t.same(year.zero_result_queries.map((row: { query: string }) => row.query), ['within the year', 'zz rare miss']);
  });

  t.test(`${backend}: a past day's zero-result texts tied at the 500th place are kept by their zero-result asks on every day`, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend, { queryEventsRetentionDays: 0 });
    const { id } = await createTestCollection(app, admin, { name: 'shoal' });
    const pastDay = dayBefore(2, 3_600_000);
    // The past day's top list is full of texts asked twice with results; more texts than a list keeps
    // were asked once with none.
    const answered = Array.from({ length: QUERY_TEXTS_KEPT_PER_DAY }, (_, n): [string, number] => [`answered ${String(n).padStart(4, '0')}`, 2]);
    const misses = Array.from({ length: QUERY_TEXTS_KEPT_PER_DAY + 100 }, (_, n): [string, number] => [`miss ${String(n).padStart(4, '0')}`, 0]);
    await recordQueries(services, id, [...answered, ...answered, ...misses], pastDay);
    // Last of the misses by folded key, so a tie broken by key alone cuts it; answered with nothing twice more today.
    const favoured = lastByFoldedKey(misses.map(([query]) => query));
    await recordQueries(services, id, [[favoured, 0], [favoured, 0]], new Date());

    const swept = await services.expiredRecordsSweep.sweep();
    t.equal(swept.query_texts, 100, 'the past day keeps its 500 answered texts and 500 of the misses');
    const analytics = (await app.inject({ url: '/v1/collections/shoal/analytics', headers: admin })).json();
    t.same(analytics.zero_result_queries[0], { query: favoured, count: 3 }, 'the favoured miss keeps its past day\'s count');
    t.same(analytics.zero_result_queries.slice(1).map((row: { count: number }) => row.count), Array.from({ length: 19 }, () => 1), 'the rest count their one miss');
  });
}
