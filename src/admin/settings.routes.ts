import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { recordAudit } from '../audit/audit.service.js';
import { SettingList, SettingsCheck } from './admin-response-schemas.js';
import { requireActor } from '../http/authenticate.js';
import { ADMIN_SESSION } from '../http/route-access.js';
import type { AppServices } from '../services.js';

const ValuesBody = Type.Object({ values: Type.Record(Type.String(), Type.Unknown()) }, { additionalProperties: false });
const KeysBody = Type.Object({ keys: Type.Array(Type.String(), { minItems: 1 }) }, { additionalProperties: false });

export const adminSettingsRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { db, settings } = services;
  const tags = ['admin: settings'];

  app.get('/v1/admin/settings', { config: { ...ADMIN_SESSION, openapi: { response: SettingList } }, schema: { tags, summary: 'Every runtime setting with its value, default and source' } }, async () => ({ data: await settings.list() }));

  app.patch('/v1/admin/settings', { config: { ...ADMIN_SESSION, openapi: { response: SettingList } }, schema: { tags, summary: 'Set runtime settings; a bad value is a 400 and nothing is saved', body: ValuesBody } }, async (request) => {
    const em = db.fork();
    recordAudit(em, requireActor(request), { action: 'settings.update', resourceType: 'settings', details: { keys: Object.keys(request.body.values) } });
    return { data: await settings.update(em, request.body.values) };
  });

  app.post('/v1/admin/settings/test', { config: { ...ADMIN_SESSION, openapi: { response: SettingsCheck } }, schema: { tags, summary: 'Validate values without saving', body: ValuesBody } }, async (request) => {
    const errors = settings.validate(request.body.values);
    return { ok: errors.length === 0, errors };
  });

  app.post('/v1/admin/settings/reset', { config: { ...ADMIN_SESSION, openapi: { response: SettingList } }, schema: { tags, summary: 'Return the named settings to their defaults', body: KeysBody } }, async (request) => {
    const em = db.fork();
    const data = await settings.reset(em, request.body.keys);
    recordAudit(em, requireActor(request), { action: 'settings.reset', resourceType: 'settings', details: { keys: request.body.keys } });
    await em.flush();
    return { data };
  });
};
