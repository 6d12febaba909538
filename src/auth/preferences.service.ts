import type { EntityManager } from '@mikro-orm/postgresql';
import type { SecretBox } from '../crypto/secret-box.js';
import { BadRequestError } from '../errors.js';
import { getUser } from './users.service.js';

type JsonObject = Record<string, unknown>;

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Spec 4.2 merge: keys absent from the patch are kept, a key sent as null is stored as null,
 * arrays replace, objects merge recursively.
 */
export function deepMergePreferences(stored: JsonObject, patch: JsonObject): JsonObject {
  const merged: JsonObject = { ...stored };
  for (const [key, value] of Object.entries(patch)) {
    const current = merged[key];
    merged[key] = isPlainObject(value) && isPlainObject(current) ? deepMergePreferences(current, value) : value;
  }
  return merged;
}

/** The body may be `{data: {...}}` or the bare object. */
export function preferencesPatchFromBody(body: unknown): JsonObject {
  if (!isPlainObject(body)) throw new BadRequestError('Preferences must be a JSON object');
  const keys = Object.keys(body);
  if (keys.length === 1 && keys[0] === 'data') {
    if (!isPlainObject(body.data)) throw new BadRequestError('data must be a JSON object');
    return body.data;
  }
  return body;
}

function publicView(preferences: JsonObject, hasOpenaiKey: boolean): JsonObject {
  if (!isPlainObject(preferences.chat)) return preferences;
  return { ...preferences, chat: { ...preferences.chat, has_openai_key: hasOpenaiKey } };
}

export async function readPreferences(em: EntityManager, userId: string): Promise<JsonObject> {
  const user = await getUser(em, userId);
  return publicView(user.preferences, user.chatOpenaiKeySealed !== null);
}

/** Merges a patch; `chat.openai_key` is sealed with MASTER_KEY and kept out of the stored object. */
export async function mergePreferences(em: EntityManager, userId: string, patch: JsonObject, secrets: SecretBox): Promise<JsonObject> {
  const user = await getUser(em, userId);
  const plainPatch: JsonObject = { ...patch };
  if (isPlainObject(patch.chat)) {
    const { openai_key: openaiKey, has_openai_key: _derived, ...chat } = patch.chat;
    if (openaiKey === null) user.chatOpenaiKeySealed = null;
    else if (typeof openaiKey === 'string' && openaiKey !== '') user.chatOpenaiKeySealed = secrets.seal(openaiKey);
    else if (openaiKey !== undefined) throw new BadRequestError(`chat.openai_key must be a non-empty string, or null to clear the stored key; it is ${openaiKey === '' ? 'an empty string' : `of type ${Array.isArray(openaiKey) ? 'array' : typeof openaiKey}`}`);
    plainPatch.chat = chat;
  } else if (patch.chat !== undefined) {
    // Replacing the whole chat object (null or a scalar) drops the key stored under it too.
    user.chatOpenaiKeySealed = null;
  }
  user.preferences = deepMergePreferences(user.preferences, plainPatch);
  user.updatedAt = new Date();
  await em.flush();
  return publicView(user.preferences, user.chatOpenaiKeySealed !== null);
}
