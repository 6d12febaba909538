import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { pinnedCollection } from '../auth/actor.js';
import { PinnedCollectionDeletedError } from '../errors.js';
import { requireActor } from '../http/authenticate.js';
import { scope } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { usageReport } from './usage-report.js';
import { UsageReport } from './usage-response-schema.js';
import { WindowDays } from './utc-day-window.js';

const WindowQuery = Type.Object({ window_days: WindowDays }, { additionalProperties: false });

/** The usage report (spec 2.9, 4.4): sessions, or keys with `audit:read`. */
export const usageRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const tags = ['usage'];
  const report = async (windowDays: number, onlyCollection?: string) => {
    // Query events are buffered for a second; the report counts every query answered so far.
    await services.queryRuntime.events.flushBeforeRead();
    return usageReport(services.sql, services.embeddingUsage, windowDays, onlyCollection);
  };

  app.get('/v1/usage', {
    config: { ...scope('audit:read'), openapi: { response: UsageReport } },
    schema: { tags, summary: 'Usage over the trailing window; a pinned key sees its collection only', querystring: WindowQuery },
  }, async (request) => {
    const pin = pinnedCollection(requireActor(request));
    const usage = await report(request.query.window_days, pin?.id);
    // By id: a collection created again under the pin's name is another one (see assertCollectionAccess).
    if (pin && usage.by_collection.length === 0) throw new PinnedCollectionDeletedError(pin.name);
    return usage;
  });

  app.get('/v1/status/usage', {
    config: { ...scope('audit:read', { refusePinned: true }), openapi: { response: UsageReport } },
    schema: { tags, summary: 'The usage report of the whole instance (refused for pinned keys)', querystring: WindowQuery },
  }, async (request) => report(request.query.window_days));
};
