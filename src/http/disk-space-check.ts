import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { DiskSpaceGuard } from '../storage/disk-space.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route writes what the client sends to DATA_DIR (uploads, vectors): refused while the disk is nearly full. */
    needsDiskSpace?: boolean;
  }
}

/** Route `config` of a route that stores what the client sends. */
export const NEEDS_DISK_SPACE = { needsDiskSpace: true } as const;

/**
 * Answers 507 before such a route reads its body when the disk holding DATA_DIR has less than
 * MIN_FREE_DISK_MB free, counting the request's declared length. After authentication, so a
 * caller who may not write learns nothing of the disk.
 */
export const diskSpaceCheck = fp(async (app: FastifyInstance, { guard }: { guard: DiskSpaceGuard }) => {
  if (!guard.enabled) return;
  app.addHook('preHandler', async (request) => {
    if (!request.routeOptions.config.needsDiskSpace) return;
    await guard.assertRoomFor(Number(request.headers['content-length']) || 0);
  });
}, { name: 'disk-space-check' });
