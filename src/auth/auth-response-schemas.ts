/**
 * The documented answers of the auth routes and of the admin user and API-key routes: the user
 * view (serializeUser of users.service.ts), the API-key view (serializeApiKey of
 * api-keys.service.ts), whoami and the small auth answers. Documentation only: Fastify does not
 * serialise through them (see `openapi.response` in src/http/openapi.ts).
 */
import { Type } from 'typebox';
import { USER_ROLES } from '../db/entities/index.js';
import { stringEnum } from '../http/string-enum.js';
import { Nullable, PageOf, Timestamp } from '../http/response-schemas.js';

const Role = stringEnum(USER_ROLES);
const Scopes = Type.Array(Type.String(), { description: '`resource:action`, `*` for any' });

/** A user as every route shows one: never the password hash or the preferences. */
export const UserView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  email: Type.String(),
  display_name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
  created_at: Timestamp,
  updated_at: Timestamp,
}, { additionalProperties: false });

const apiKeyFields = {
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  prefix: Type.String({ description: 'the first characters of the key, to recognise it' }),
  scopes: Scopes,
  collection: Type.Union([Type.String(), Type.Null()], { description: 'the collection the key is pinned to; null: not pinned' }),
  collection_deleted: Type.Boolean({ description: 'the pinned collection was deleted: the key is refused until it is pinned again or unpinned' }),
  active: Type.Boolean(),
  expires_at: Nullable(Timestamp),
  last_used_at: Nullable(Timestamp),
  created_by: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'the user who minted the key' }),
  created_at: Timestamp,
  updated_at: Timestamp,
};

/** An API key as listed, read and updated: never the key itself. */
export const ApiKeyView = Type.Object(apiKeyFields, { additionalProperties: false });

/** A key just minted or rotated: the view and the plaintext key, in this answer only. */
export const MintedApiKey = Type.Object({
  ...apiKeyFields,
  key: Type.Union([Type.String({ pattern: '^svc_sk_' }), Type.Null()], { description: 'the plaintext key, shown once; null when the answer is replayed for an Idempotency-Key' }),
  key_shown_once: Type.Optional(Type.Literal(true, { description: 'in a replayed answer: the key was shown in the first one only' })),
}, { additionalProperties: false });

export const UserPage = PageOf(UserView);
export const ApiKeyPage = PageOf(ApiKeyView);

export const SetupStatus = Type.Object({
  needs_setup: Type.Boolean({ description: 'no user exists yet: POST /v1/auth/setup creates the first admin' }),
}, { additionalProperties: false });

const SessionIdentity = Type.Object({
  auth_method: Type.Literal('session'),
  user: Type.Object({ id: Type.String({ format: 'uuid' }), email: Type.String(), role: Role }, { additionalProperties: false }),
  scopes: Scopes,
  collection: Type.Null(),
  collection_deleted: Type.Literal(false),
}, { additionalProperties: false });

const ApiKeyIdentity = Type.Object({
  auth_method: Type.Literal('api_key'),
  api_key: Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String(), prefix: Type.String() }, { additionalProperties: false }),
  scopes: Scopes,
  collection: apiKeyFields.collection,
  collection_deleted: apiKeyFields.collection_deleted,
}, { additionalProperties: false });

/** GET /v1/auth/whoami: a session's user and role scopes, or a key's scopes and pin. */
export const Whoami = Type.Union([SessionIdentity, ApiKeyIdentity]);

export const Preferences = Type.Object({
  data: Type.Record(Type.String(), Type.Unknown(), {
    description: 'free-form, as stored; `chat.openai_key` is never returned, `chat.has_openai_key` says whether one is stored',
  }),
}, { additionalProperties: false });

export const LogoutAll = Type.Object({
  revoked_sessions: Type.Integer({ minimum: 0 }),
}, { additionalProperties: false });
