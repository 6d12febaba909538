import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { OPEN } from './route-access.js';

/** The OpenAPI document is generated from the route schemas and served at /docs/json. */
export const openapi = fp(async (app: FastifyInstance) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'retrieval-service', version: '0.1.0', description: 'Document ingestion and retrieval API' },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key `svc_sk_...`' },
          session: { type: 'apiKey', in: 'cookie', name: 'svc_session' },
        },
      },
      security: [{ apiKey: [] }, { session: [] }],
    },
  });
  app.get('/docs/json', { config: OPEN, schema: { hide: true } }, async () => app.swagger());
}, { name: 'openapi' });
