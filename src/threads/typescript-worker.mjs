// Runs the TypeScript worker module named by the last argument under tsx (see module-worker.ts).
// A file rather than `eval` code: native addons (usearch through `bindings`) find their package
// from the caller's file name in a stack trace, which eval code does not have.
import { register } from 'tsx/esm/api';

register();
await import(process.argv[process.argv.length - 1]);
