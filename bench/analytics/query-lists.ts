/**
 * Analytics' top and zero-result query lists (`GET /v1/collections/{name}/analytics`) over a busy
 * collection: `events` queries (1,000,000 by default) spread evenly over the last `days` (29 by default), their texts
 * drawn from 200,000 with a skew (text n ~ 200,000 × u³), 1 in 11 with no result. They are recorded
 * by the service's own recorder, 10,000 a statement, as the query path records them; then the
 * hourly sweep runs once (it cuts the past days to their most asked texts, query-daily-texts.ts,
 * and is timed), and the analytics of a 30-day and a 1-day window are asked through the API.
 * `events_path_ms` times the statements the lists ran before 2026-12-01 (grouping every query event
 * of the window) on the same events, and `top_20_as_exact` says how many of the API's top 20 have
 * the count the events give for their text and the count the events' own top 20 has at their
 * place (`zero_result_20_as_exact` the same of the zero-result list). `stats_median_ms` times `GET /v1/stats`, whose `queries_last_24h` sums hourly counts and
 * counts the events of one hour (migration 0025; it counted every event of the last 24 hours
 * before 2026-12-01).
 *
 * Run: npx tsx bench/analytics/query-lists.ts [events=1000000] [days=29]
 * DATABASE_URL: PostgreSQL (that database is dropped and recreated); else the embedded database in
 * a temporary directory. Writes bench/results/analytics-query-lists-<pglite|postgresql>.json
 * (BENCH_OUT overrides).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seededRandom } from '../search/corpus.js';
import { serviceInProcess } from '../support/service-in-process.js';
import { callService, machineDescription, writeResult } from '../support/service-process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const eventCount = Number(process.argv[2] ?? 1_000_000);
const database = process.env.DATABASE_URL ? 'postgresql' : 'pglite';
const out = process.env.BENCH_OUT ?? path.join(root, `bench/results/analytics-query-lists-${database}.json`);
const DISTINCT_TEXTS = 200_000;
const DAYS = Number(process.argv[3] ?? 29);
const EVENTS_A_STATEMENT = 10_000;
const REQUESTS = 10;
const DAY_MS = 86_400_000;
const log = (message: string) => process.stderr.write(`[analytics-query-lists] ${message}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round1 = (value: number) => Math.round(value * 10) / 10;

/** The statements the lists ran before 2026-12-01, over the window's query events. */
const QUERY_TEXT = `btrim(regexp_replace(query, '\\s+', ' ', 'g'))`;
const EVENTS_PATH = [
  `select mode() within group (order by ${QUERY_TEXT}) as query, count(*) as count, avg(result_count) as avg_results from query_events
   where collection_id = ? and created_at >= ?::timestamptz group by lower(${QUERY_TEXT}) order by count(*) desc, 1 limit 20`,
  `select mode() within group (order by ${QUERY_TEXT}) as query, count(*) as count from query_events
   where collection_id = ? and created_at >= ?::timestamptz and result_count = 0 group by lower(${QUERY_TEXT}) order by count(*) desc, 1 limit 20`,
];

const { services, baseUrl, key, close } = await serviceInProcess('analytics-bench');
const collection = await callService(baseUrl, key, '/v1/collections', { method: 'POST', json: { name: 'asked' } }) as { id: string };

log(`recording ${eventCount} query events`);
const random = seededRandom(20261201);
const now = Date.now();
let recordMs = 0;
for (let recorded = 0; recorded < eventCount;) {
  const statement = Math.min(EVENTS_A_STATEMENT, eventCount - recorded);
  for (let index = 0; index < statement; index++) {
    const text = Math.floor(DISTINCT_TEXTS * random() ** 3);
    const resultCount = Math.floor(random() * 11);
    services.queryRuntime.events.record({
      collectionId: collection.id, query: `how do I configure query number ${text}`, searchMode: 'hybrid',
      resultCount, latencyMs: random() * 10, cached: false, at: new Date(now - random() * DAYS * DAY_MS),
    });
  }
  const started = performance.now();
  await services.queryRuntime.events.flushBeforeRead();
  recordMs += performance.now() - started;
  recorded += statement;
}

const sweepStarted = performance.now();
const swept = await services.expiredRecordsSweep.sweep();
const sweepMs = performance.now() - sweepStarted;
const [texts] = await services.sql<{ rows: number; today: number }>(
  "select count(*)::int as rows, count(*) filter (where day = (now() at time zone 'UTC')::date)::int as today from query_daily_texts",
);
log(`swept in ${Math.round(sweepMs)} ms: ${JSON.stringify(swept)}; ${texts!.rows} text rows left`);

const windows: Record<string, { median_ms: number; top_queries: number; zero_result_queries: number }> = {};
let topOf30: Array<{ query: string; count: number }> = [];
let zeroOf30: Array<{ query: string; count: number }> = [];
for (const windowDays of [30, 1]) {
  const times: number[] = [];
  let answer: { top_queries: Array<{ query: string; count: number }>; zero_result_queries: Array<{ query: string; count: number }> } | undefined;
  for (let request = 0; request < REQUESTS; request++) {
    const started = performance.now();
    answer = await callService(baseUrl, key, `/v1/collections/asked/analytics?window_days=${windowDays}`);
    times.push(performance.now() - started);
  }
  windows[`window_${windowDays}_days`] = { median_ms: round1(median(times)), top_queries: answer!.top_queries.length, zero_result_queries: answer!.zero_result_queries.length };
  if (windowDays === 30) {
    topOf30 = answer!.top_queries;
    zeroOf30 = answer!.zero_result_queries;
  }
}

// GET /v1/stats counts the queries of the last 24 hours (queries_last_24h) with the rest of its figures.
const statsTimes: number[] = [];
for (let request = 0; request < REQUESTS; request++) {
  const started = performance.now();
  await callService(baseUrl, key, '/v1/stats');
  statsTimes.push(performance.now() - started);
}

log('timing the lists over the query events, as before');
const since = new Date(Math.floor(now / DAY_MS) * DAY_MS - 29 * DAY_MS).toISOString();
const eventsTimes: number[] = [];
let exact: Array<{ query: string; count: string | number }> = [];
let exactZero: Array<{ query: string; count: string | number }> = [];
for (let request = 0; request < 3; request++) {
  const started = performance.now();
  exact = await services.sql(EVENTS_PATH[0]!, [collection.id, since]);
  exactZero = await services.sql(EVENTS_PATH[1]!, [collection.id, since]);
  eventsTimes.push(performance.now() - started);
}
// Exact when a listed text has the count its events give and the count the events' own list has at
// that place: a list that breaks a tie at its end otherwise (the API by folded key, these
// statements by text) is as exact.
const apiTextCounts = await services.sql<{ key: string; count: string | number; zero: string | number }>(
  `select lower(${QUERY_TEXT}) as key, count(*) as count, count(*) filter (where result_count = 0) as zero from query_events
    where collection_id = ? and created_at >= ?::timestamptz and lower(${QUERY_TEXT}) = any(?::text[]) group by 1`,
  [collection.id, since, [...topOf30, ...zeroOf30].map((row) => row.query.toLowerCase())],
);
const eventCountOf = new Map(apiTextCounts.map((row) => [row.key, { count: Number(row.count), zero: Number(row.zero) }]));
const topAsExact = topOf30.filter((row, place) => eventCountOf.get(row.query.toLowerCase())?.count === row.count && Number(exact[place]?.count) === row.count).length;
const zeroAsExact = zeroOf30.filter((row, place) => eventCountOf.get(row.query.toLowerCase())?.zero === row.count && Number(exactZero[place]?.count) === row.count).length;

await close();

await writeResult(out, {
  benchmark: 'analytics-query-lists', date: new Date().toISOString(), database, machine: machineDescription(),
  events: eventCount, distinct_texts_drawn_from: DISTINCT_TEXTS, days: DAYS,
  record_ms_per_10000_events: round1(recordMs / (eventCount / EVENTS_A_STATEMENT)),
  sweep_ms: Math.round(sweepMs), text_rows_cut: swept.query_texts, text_rows_left: texts!.rows, text_rows_today: texts!.today,
  api: windows,
  events_path_ms: round1(median(eventsTimes)),
  stats_median_ms: round1(median(statsTimes)),
  top_20_as_exact: topAsExact,
  zero_result_20_as_exact: zeroAsExact,
});
