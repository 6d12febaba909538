// tap's `before` script (package.json): prunes the transpiled sources of earlier runs (transpile-cache.mjs).
import { pruneTranspileCache } from './transpile-cache.mjs';

await pruneTranspileCache();
