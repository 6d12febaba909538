import cookie from '@fastify/cookie';
import multipart from '@fastify/multipart';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { adminApiKeyRoutes } from './admin/api-keys.routes.js';
import { adminAuditRoutes } from './admin/audit.routes.js';
import { adminEmbeddingCacheRoutes } from './admin/embedding-cache.routes.js';
import { adminEmbeddingPresetRoutes } from './admin/embedding-presets.routes.js';
import { adminSettingsRoutes } from './admin/settings.routes.js';
import { adminUserRoutes } from './admin/users.routes.js';
import { adminVectorStorageRoutes } from './admin/vector-storage.routes.js';
import { authRoutes } from './auth/auth.routes.js';
import { collectionRoutes } from './collections/collections.routes.js';
import { instanceStatsRoutes } from './collections/instance-stats.routes.js';
import { batchRoutes } from './documents/batches.routes.js';
import { documentRoutes } from './documents/documents.routes.js';
import { queryRoutes } from './search/query.routes.js';
import { usageRoutes } from './usage/usage.routes.js';
import { uploadSessionRoutes } from './uploads/upload-sessions.routes.js';
import { vectorRoutes } from './vectors/vectors.routes.js';
import { healthRoutes } from './health/health.routes.js';
import { authenticate } from './http/authenticate.js';
import { answerClientError, answerFrameworkError, MAX_PATH_SEGMENT_LENGTH } from './http/client-errors.js';
import { connectionDrain } from './http/connection-drain.js';
import { crossOriginAccess } from './http/cross-origin-access.js';
import { diskSpaceCheck } from './http/disk-space-check.js';
import { errorHandler } from './http/error-handler.js';
import { idempotency } from './http/idempotency.js';
import { acceptJsonBodies } from './http/json-body.js';
import { openapi } from './http/openapi.js';
import { unstorableValues } from './http/unstorable-values.js';
import { createValidatorCompiler } from './http/validation.js';
import type { AppServices } from './services.js';
import { multipartLimits } from './uploads/multipart-files.js';

export interface BuildAppOptions {
  services: AppServices;
  /** The process logger; tests leave it out and run silent. */
  logger?: FastifyBaseLogger;
}

/**
 * The whole HTTP boot order: shared infrastructure first (errors, cookies, OpenAPI, auth,
 * idempotency), then the route plugins. Tests build the app through this same function.
 */
export async function buildApp({ services, logger }: BuildAppOptions) {
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    bodyLimit: services.config.bodyLimitBytes,
    // Finish in-flight requests on close, answer new ones with 503 meanwhile.
    return503OnClosing: true,
    requestIdHeader: 'x-request-id',
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_SEGMENT_LENGTH },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(createValidatorCompiler());
  // Bodies are JSON (or multipart uploads); anything else is a 415 rather than a string body.
  app.removeContentTypeParser('text/plain');
  acceptJsonBodies(app);
  await app.register(errorHandler);
  await app.register(connectionDrain);
  await app.register(unstorableValues);
  await app.register(cookie);
  // Files stream to storage part by part; the size limit surfaces as a truncated stream (413).
  await app.register(multipart, {
    throwFileSizeLimit: false,
    limits: multipartLimits(services.config.uploadLimitBytes),
  });
  await app.register(openapi);
  // Before authentication, so that its refusals carry the CORS headers and the page can read them.
  await app.register(crossOriginAccess, { origins: services.config.corsOrigins });
  await app.register(authenticate, { services });
  await app.register(idempotency, { services });
  await app.register(diskSpaceCheck, { guard: services.diskSpace });

  await app.register(healthRoutes, { services });
  await app.register(authRoutes, { services });
  await app.register(adminUserRoutes, { services });
  await app.register(adminApiKeyRoutes, { services });
  await app.register(adminAuditRoutes, { services });
  await app.register(adminSettingsRoutes, { services });
  await app.register(adminEmbeddingCacheRoutes, { services });
  await app.register(adminEmbeddingPresetRoutes, { services });
  await app.register(adminVectorStorageRoutes, { services });
  await app.register(collectionRoutes, { services });
  await app.register(documentRoutes, { services });
  await app.register(batchRoutes, { services });
  await app.register(uploadSessionRoutes, { services });
  await app.register(queryRoutes, { services });
  await app.register(vectorRoutes, { services });
  await app.register(instanceStatsRoutes, { services });
  await app.register(usageRoutes, { services });
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
