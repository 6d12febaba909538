import type { FastifyReply } from 'fastify';
import type { SettingsService } from '../settings/settings.service.js';
import type { IssuedSession } from './sessions.service.js';

/** Cookie attributes come from instance settings (spec 5.1, api-contract 5). */
async function cookieOptions(settings: SettingsService) {
  const sameSite = await settings.get<'lax' | 'strict' | 'none'>('session_cookie_samesite');
  return {
    name: await settings.get<string>('session_cookie_name'),
    options: {
      httpOnly: true,
      sameSite,
      // Browsers reject SameSite=None without Secure, so None implies Secure.
      secure: (await settings.get<boolean>('session_cookie_secure')) || sameSite === 'none',
      path: '/',
    },
  };
}

export async function setSessionCookie(reply: FastifyReply, settings: SettingsService, session: IssuedSession): Promise<void> {
  const { name, options } = await cookieOptions(settings);
  reply.setCookie(name, session.token, { ...options, expires: session.expiresAt });
}

export async function clearSessionCookie(reply: FastifyReply, settings: SettingsService): Promise<void> {
  const { name, options } = await cookieOptions(settings);
  reply.clearCookie(name, options);
}
