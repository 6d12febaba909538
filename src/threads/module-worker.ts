import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts the worker module `name` (without extension) that sits next to the module at `besideUrl`
 * (its `import.meta.url`). `npm start` runs the compiled JavaScript. Tests and `npm run dev` run the
 * TypeScript sources, whose loader hook a worker thread does not inherit, so there the thread
 * registers tsx before importing its module (typescript-worker.mjs).
 */
export function startModuleWorker(besideUrl: string, name: string, options: Pick<WorkerOptions, 'resourceLimits'> = {}): Worker {
  if (!besideUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, besideUrl), options);
  return new Worker(new URL('./typescript-worker.mjs', import.meta.url), { ...options, argv: [new URL(`./${name}.ts`, besideUrl).href], execArgv: [] });
}
