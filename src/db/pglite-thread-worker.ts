/**
 * The thread side of pglite-thread.ts: opens PGlite and runs the statements it is sent, in order
 * (PGlite queues them on its one connection), answering rows or the error's fields.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite/vector';
import { errorFields, READY_ID, type ThreadAnswer } from '../threads/thread-requests.js';
import type { PgliteThreadRequest, PgliteThreadSettings } from './pglite-thread.js';

const { dataDir, settings } = workerData as PgliteThreadSettings;
const port = parentPort!;

try {
  const pglite = await PGlite.create({ ...(dataDir === undefined ? {} : { dataDir }), extensions: { vector } });
  for (const [name, value] of Object.entries(settings)) await pglite.query('select set_config($1, $2, false)', [name, value]);
  port.on('message', (request: PgliteThreadRequest) => {
    const work = request.method === 'query' ? pglite.query(request.sql, request.params) : request.method === 'exec' ? pglite.exec(request.sql) : pglite.close();
    work.then(
      (result) => port.postMessage({ id: request.id, result } satisfies ThreadAnswer),
      (error: unknown) => port.postMessage({ id: request.id, error: errorFields(error) } satisfies ThreadAnswer),
    );
  });
  port.postMessage({ id: READY_ID, result: null } satisfies ThreadAnswer);
} catch (error) {
  port.postMessage({ id: READY_ID, error: errorFields(error) } satisfies ThreadAnswer);
}
