// Module hooks that let the test processes import the TypeScript sources (registered by
// typescript-loader.mjs, the suite's `node-arg` in package.json). Sucrase strips the types and keeps
// every line where it was, so coverage lines are the source's; `npm run typecheck` checks the types.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from 'sucrase';
import { TRANSPILE_CACHE_DIRECTORY } from './transpile-cache.mjs';

// What the output depends on besides the source: sucrase's version and these hooks (its options).
const TRANSPILER = `${createRequire(import.meta.url)('sucrase/package.json').version}\0${readFileSync(fileURLToPath(import.meta.url), 'utf8')}`;
// Each test process loads some 260 source files: transpiled once, then read back (about 1 s of CPU a
// process). Pruned before each run (transpile-cache.mjs).
await mkdir(TRANSPILE_CACHE_DIRECTORY, { recursive: true });

const RELATIVE_JAVASCRIPT = /^\.\.?\/.*\.js$/;

/** The sources import each other as `./name.js` (NodeNext resolution): that is `./name.ts` here. */
export async function resolve(specifier, context, nextResolve) {
  if (RELATIVE_JAVASCRIPT.test(specifier) && context.parentURL?.endsWith('.ts')) {
    try {
      return await nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    } catch (error) {
      if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    }
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context);
  // Through the rest of the chain first: tap's coverage covers only the files its processinfo hook
  // saw loaded. What the chain returns is not used: on tap's first run after `npm ci` the chain
  // still holds tap's TypeScript plugin, whose output has other lines.
  await nextLoad(url, { ...context, format: 'module' });
  const filePath = fileURLToPath(url);
  const source = await readFile(filePath, 'utf8');
  const cached = path.join(TRANSPILE_CACHE_DIRECTORY, `${createHash('sha256').update(`${TRANSPILER}\0${filePath}\0${source}`).digest('hex')}.js`);
  const transpiled = await readFile(cached, 'utf8').catch(() => undefined) ?? await transpileInto(cached, filePath, source);
  return { format: 'module', source: transpiled, shortCircuit: true };
}

async function transpileInto(cached, filePath, source) {
  const { code, sourceMap } = transform(source, {
    transforms: ['typescript'],
    disableESTransforms: true,
    filePath,
    sourceMapOptions: { compiledFilename: filePath },
  });
  const inlineMap = Buffer.from(JSON.stringify({ ...sourceMap, sources: [filePath] })).toString('base64');
  const transpiled = `${code}\n//# sourceMappingURL=data:application/json;base64,${inlineMap}\n`;
  // Written aside, then renamed: test processes running side by side never read half a file.
  const partial = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await writeFile(partial, transpiled);
  await rename(partial, cached);
  return transpiled;
}
