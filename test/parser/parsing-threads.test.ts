/**
 * Large files are parsed on a thread of their own (PARSE_ON_THREAD_MIN_BYTES), within a memory
 * limit (PARSE_MEMORY_LIMIT_MB) and a time limit (PARSE_TIMEOUT_S): a file that exceeds one fails
 * at the parsing stage saying which, where it used to take the whole process down, and the
 * documents after it are ingested. document-formats.test.ts runs every format on such threads.
 */
import t from 'tap';
import { buildTestApp, createTestCollection, multipartUpload, setupAdmin, testBackends, waitForIngestion } from '../support/test-app.js';

/** Lists nested 60 levels deep, repeated: within the nesting limit, and heavy to parse (~150 MB a MB). */
function heavyMarkdown(bytes: number): string {
  const list = Array.from({ length: 60 }, (_, level) => `${'  '.repeat(level)}- level ${level}`).join('\n');
  return Array.from({ length: Math.ceil(bytes / list.length) }, () => list).join('\n\n');
}

/** Plain paragraphs: light to parse. */
function largeMarkdown(bytes: number): string {
  const paragraph = 'Harbour pilots board container ships outside the breakwater at dawn.';
  return `# Pilots\n\n${Array.from({ length: Math.ceil(bytes / paragraph.length) }, () => paragraph).join('\n\n')}\n`;
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const ctx = await buildTestApp(backend, { parseMemoryLimitMb: 64 });
    t.teardown(() => ctx.close());
    const headers = { cookie: await setupAdmin(ctx.app) };
    await createTestCollection(ctx.app, headers, { name: 'threads' });
    const upload = async (filename: string, content: string) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/markdown' }]);
      const response = await ctx.app.inject({ method: 'POST', url: '/v1/collections/threads/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const document = async (id: string) => (await ctx.app.inject({ url: `/v1/collections/threads/documents/${id}`, headers })).json();

    const heavy = await upload('heavy.md', heavyMarkdown(4 * 1024 * 1024));
    const large = await upload('large.md', largeMarkdown(400 * 1024));
    const small = await upload('small.md', '# Note\n\nA short note about tides.\n');
    await waitForIngestion(ctx.app, 'threads', headers, 120_000);
    t.match(await document(heavy), {
      status: 'failed', error: 'parsing failed: the markdown parser: the file needs more than 64 MB of memory to parse (PARSE_MEMORY_LIMIT_MB)',
    }, 'a file that needs more memory than the limit fails alone');
    t.match(await document(large), { status: 'ready', error: null }, 'a large file within the limits, parsed on a thread');
    t.ok((await document(large)).chunk_count > 100);
    t.match(await document(small), { status: 'ready', error: null }, 'a small file, parsed where it is');
  });
}

t.test('a file that takes longer than PARSE_TIMEOUT_S fails, naming the limit', async (t) => {
  const ctx = await buildTestApp('pglite', { parseTimeoutMs: 1 });
  t.teardown(() => ctx.close());
  const headers = { cookie: await setupAdmin(ctx.app) };
  await createTestCollection(ctx.app, headers, { name: 'slow' });
  const body = multipartUpload([{ filename: 'large.md', content: largeMarkdown(400 * 1024), contentType: 'text/markdown' }]);
  const response = await ctx.app.inject({ method: 'POST', url: '/v1/collections/slow/documents', headers: { ...headers, ...body.headers }, payload: body.payload });
  t.equal(response.statusCode, 202, response.body);
  await waitForIngestion(ctx.app, 'slow', headers);
  t.match((await ctx.app.inject({ url: `/v1/collections/slow/documents/${response.json().id}`, headers })).json(), {
    status: 'failed', error: 'parsing failed: the markdown parser: it took longer than 0.001 s (PARSE_TIMEOUT_S)',
  });
});
