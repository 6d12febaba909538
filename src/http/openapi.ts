import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { Type, type TSchema } from 'typebox';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the OpenAPI document says of the route beyond its schemas: documentation only, never validation. */
    openapi?: OperationDocs;
  }
}

type SuccessStatus = 200 | 201 | 202 | 204;

interface OperationDocs {
  /** The success status(es) when not the method's usual one (DELETE 204, any other 200). */
  success?: SuccessStatus | SuccessStatus[];
  /** Error statuses beyond those the route's access, inputs and method imply (see `impliedErrors`). */
  errors?: number[];
  /**
   * The body as documented where the validation schema cannot say it: a multipart form (a body schema
   * would make Fastify validate the stream) or fields the service refuses by name with its own 400.
   */
  body?: TSchema;
  /** The route takes no body as an empty one (it fills it in before validation). */
  bodyOptional?: boolean;
  /**
   * The success body, documented only: a `schema.response` would make Fastify serialise through
   * it, dropping what it does not list. Tests check real answers against it (openapi-responses).
   */
  response?: TSchema;
}

/**
 * @fastify/swagger marks every body required, since Fastify refuses a missing one; it copies `x-`
 * keys of the schema onto the operation, so this one carries the exception to `withOptionalBodies`.
 */
const OPTIONAL_BODY = 'x-optional-body';

const SUCCESS_DESCRIPTIONS: Record<SuccessStatus, string> = {
  200: 'OK',
  201: 'Created: the new record',
  202: 'Accepted: the work goes on in the background',
  204: 'Done; no body',
};

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: a parameter or body the schema refuses (details in `errors`), a body that is not valid JSON, or a NUL character (%00) in the URL',
  401: 'No credentials, or an unknown, expired or inactive API key or session',
  403: 'Forbidden: missing scope, API key pinned to another collection, session-only route, or cross-origin request',
  404: 'Not found',
  409: 'Conflict with the current state, or a request with the same Idempotency-Key still in flight',
  413: 'The body or an uploaded file is too large',
  415: 'Unsupported media type',
  422: 'The Idempotency-Key was used before for a different request',
  502: 'The embedding or reranking provider failed or could not be reached (its message in `detail`, keys redacted)',
  503: 'Unavailable for now: the database does not answer (down, restarting, out of connections; `Retry-After` says when to try again), it ended the request to resolve a deadlock with a concurrent one, the service is stopping, or another replica holds the same write',
  507: 'The disk holding DATA_DIR is (nearly) full: less than MIN_FREE_DISK_MB would be left; nothing of the request was kept',
};

/** Every error body (api-contract 1). */
const ErrorBody = Type.Object({
  detail: Type.String(),
  code: Type.Optional(Type.String()),
  errors: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), { description: 'validation details' })),
});

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The errors any route of this shape can answer, from the hooks and parsers every request passes through. */
function impliedErrors(method: string, route: RouteOptions): number[] {
  const open = route.config?.access?.kind === 'open';
  const mutating = MUTATING.has(method);
  // Every route: unstorable-values.ts refuses a NUL (%00) anywhere in the URL before routing goes
  // further, and the JSON parser refuses a malformed body whatever the route's schema says (logout
  // takes no body, yet `{` is a 400); the 400 is not tied to the route having a schema.
  const errors: number[] = [400];
  // authenticate.ts: credentials, scopes, pins, session-only routes; an open route refuses cross-origin writes only.
  if (!open) errors.push(401, 403);
  else if (mutating) errors.push(403);
  if (route.url.includes(':')) errors.push(404);
  // idempotency.ts, for callers with credentials: the same key still in flight (409) or reused for another request (422).
  if (!open && mutating) errors.push(409, 422);
  // A body may exceed the limit or be of a type no parser reads.
  if (mutating && method !== 'DELETE') errors.push(413, 415);
  // error-handler.ts: the database could not be reached. Liveness alone never asks it.
  if (route.url !== '/health') errors.push(503);
  // disk-space-check.ts: a route that stores what it is sent, while the disk is nearly full.
  if (route.config?.needsDiskSpace) errors.push(507);
  return errors;
}

/**
 * The statuses, and the success body where the route documents one (`openapi.response`): a route's
 * `schema.response` would make Fastify serialise through it, so they are documented here instead.
 */
function responses(route: RouteOptions) {
  const method = [route.method].flat()[0] ?? 'GET';
  const docs = route.config?.openapi ?? {};
  const success = [docs.success ?? (method === 'DELETE' ? 204 : 200)].flat();
  const errors = [...new Set([...impliedErrors(method, route), ...(docs.errors ?? [])])].sort((a, b) => a - b);
  const successBody = (status: SuccessStatus) => (status !== 204 && docs.response ? docs.response : { type: 'null' });
  return {
    ...Object.fromEntries(success.map((status) => [status, { ...successBody(status), description: SUCCESS_DESCRIPTIONS[status] }])),
    ...Object.fromEntries(errors.map((status) => [status, { $ref: '#/components/schemas/Error', description: ERROR_DESCRIPTIONS[status] ?? 'Error' }])),
  };
}

/** A query parameter with a default (`limit`, `offset`, `window_days`) may be left out: not required. */
function defaultsOptional(querystring: FastifySchema['querystring']) {
  const schema = querystring as { properties?: Record<string, { default?: unknown }>; required?: string[] } | undefined;
  if (!schema?.required) return querystring;
  return { ...schema, required: schema.required.filter((name) => schema.properties?.[name]?.default === undefined) };
}

/**
 * What a route accepts as credentials: nothing for an open route, the session cookie only for a
 * session route (authenticate.ts refuses API keys there with a 403), otherwise the global
 * requirement (an API key or a session) by leaving `security` out.
 */
function security(route: RouteOptions) {
  const kind = route.config?.access?.kind;
  if (kind === 'open') return { security: [] };
  if (kind === 'session') return { security: [{ session: [] }] };
  return {};
}

/** The route's operation as documented: its statuses, optional defaults, who may call it, its documented body. */
function documentOperation({ schema = {}, url, route }: { schema: FastifySchema | undefined; url: string; route: RouteOptions }) {
  const documented: FastifySchema = {
    ...schema,
    response: responses(route),
    ...(schema.querystring ? { querystring: defaultsOptional(schema.querystring) } : {}),
    ...(route.config?.openapi?.body ? { body: route.config.openapi.body } : {}),
    ...security(route),
    ...(route.config?.openapi?.bodyOptional ? { [OPTIONAL_BODY]: true } : {}),
  };
  return { schema: documented, url };
}

type Operation = { requestBody?: { required?: boolean }; [OPTIONAL_BODY]?: boolean };

function withOptionalBodies<Document extends { paths?: object }>(document: Document): Document {
  for (const operations of Object.values(document.paths ?? {}) as Array<Record<string, unknown> | undefined>) {
    for (const operation of Object.values(operations ?? {}) as Operation[]) {
      if (!operation[OPTIONAL_BODY]) continue;
      delete operation[OPTIONAL_BODY];
      if (operation.requestBody) operation.requestBody.required = false;
    }
  }
  return document;
}

/** The OpenAPI document is generated from the route schemas and served at /docs/json, with Swagger UI at /docs. */
export const openapi = fp(async (app: FastifyInstance) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'retrieval-service', version: '0.1.0', description: 'Document ingestion and retrieval API' },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key `svc_sk_...`' },
          // The name is the `session_cookie_name` setting, which an admin may change while the
          // service runs; the document is built once (and cached by @fastify/swagger), so it gives
          // the default and says where the real name comes from.
          session: {
            type: 'apiKey', in: 'cookie', name: 'svc_session',
            description: 'The session cookie set by POST /v1/auth/login and /v1/auth/setup. Its name is the `session_cookie_name` setting (default `svc_session`), which an admin may change: GET /v1/admin/settings shows the current one.',
          },
        },
        schemas: { Error: ErrorBody },
      },
      security: [{ apiKey: [] }, { session: [] }],
    },
    transform: documentOperation,
    // Only the `openapi` document is configured; a Swagger 2 one would be passed on unchanged.
    transformObject: (document) => ('openapiObject' in document ? withOptionalBodies(document.openapiObject) : document.swaggerObject),
  });
  // The document at /docs/json (and /docs/yaml), and Swagger UI at /docs to read and try it.
  await app.register(swaggerUi, { routePrefix: '/docs' });
}, { name: 'openapi' });
