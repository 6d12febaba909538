/**
 * `GET /v1/stats`' `queries_last_24h` sums hourly counts (migration 0025) and counts query events
 * only in the hour the last 24 hours start in: exact at the day's edge, unchanged when the events
 * are deleted by their retention, without a deleted collection's queries.
 */
import t from 'tap';
import { recordQueries } from '../support/recorded-queries.js';
import { adminTestApp, createTestCollection, testBackends, type TestApp } from '../support/test-app.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** `count` queries at `at`, recorded as the query path does. */
const recordQueriesAt = (services: TestApp['services'], collectionId: string, at: Date, count = 1) =>
  recordQueries(services, collectionId, Array.from({ length: count }, (_, index): [string, number] => [`query ${index}`, 1]), at);

for (const backend of testBackends()) {
  t.test(`${backend}: queries of the last 24 hours are counted from hourly counts and the edge hour's events`, async (t) => {
    const { app, services, admin } = await adminTestApp(t, backend, { queryEventsRetentionDays: 1 });
    const north = await createTestCollection(app, admin, { name: 'north' });
    const south = await createTestCollection(app, admin, { name: 'south' });
    const queriesLastDay = async () => {
      const response = await app.inject({ url: '/v1/stats', headers: admin });
      t.equal(response.statusCode, 200, response.body);
      return response.json().queries_last_24h as number;
    };

    const dayStart = Date.now() - DAY_MS;
    const edgeHour = Math.floor(dayStart / HOUR_MS) * HOUR_MS;
    await recordQueriesAt(services, south.id, new Date(Date.now() - 50 * HOUR_MS));
    // The hour the day starts in: its first moment is outside the day, a minute after the start inside.
    await recordQueriesAt(services, south.id, new Date(edgeHour));
    await recordQueriesAt(services, south.id, new Date(dayStart + 60_000));
    // The first moment of the next hour is that hour's: counted from its hourly count, not its event as well.
    await recordQueriesAt(services, south.id, new Date(edgeHour + HOUR_MS));
    await recordQueriesAt(services, north.id, new Date(Date.now() - 12 * HOUR_MS), 3);
    const asked = await app.inject({ method: 'POST', url: '/v1/collections/south/query', headers: admin, payload: { query: 'tide tables', skip_cache: true } });
    t.equal(asked.statusCode, 200, asked.body);
    t.equal(await queriesLastDay(), 6, 'a minute into the day, the next hour\'s first moment, three queries 12 hours ago and the one just answered');

    const swept = await services.expiredRecordsSweep.sweep();
    t.equal(swept.query_events, 2, 'the retention of one day deletes the events older than a day');
    t.equal(swept.query_hours, 1, 'the hourly count of 50 hours ago is deleted, the rest kept');
    t.equal(await queriesLastDay(), 6, 'the count does not change');

    const deleted = await app.inject({ method: 'DELETE', url: '/v1/collections/north', headers: admin });
    t.equal(deleted.statusCode, 204, deleted.body);
    t.equal(await queriesLastDay(), 3, 'a deleted collection\'s queries go with it');
  });
}
