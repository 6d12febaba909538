/**
 * Markdown nested deeper than 64 levels (lists, block quotes) fails at the parsing stage with a
 * reason naming the line, at once: `marked` re-reads a list item's content for every level, and
 * a 9 MB list 3,000 levels deep once took the process down. Up to 64 levels, and deep
 * indentation inside fenced code, is ingested.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const nestedList = (levels: number) => Array.from({ length: levels }, (_, level) => `${'  '.repeat(level)}- level${level}`).join('\n');

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'nesting' });
    const upload = async (filename: string, content: string) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/markdown' }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/nesting/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const document = async (id: string) => (await app.inject({ url: `/v1/collections/nesting/documents/${id}`, headers: admin })).json();
    const found = async (query: string) => ((await app.inject({
      method: 'POST', url: '/v1/collections/nesting/query', headers: admin, payload: { query, search_mode: 'keyword', skip_cache: true },
    })).json().results as Array<{ document_id: string }>).map((result) => result.document_id);

    const deepList = await upload('deep-list.md', `# Deep\n\nzanzibar harbour\n\n${nestedList(3000)}\n`);
    const deepQuote = await upload('deep-quote.md', `${'> '.repeat(5000)}quoted words\n`);
    const deepest = await upload('deepest-allowed.md', `${nestedList(64)}\n`);
    const fenced = await upload('fenced.md', `- item\n\n  \`\`\`json\n${' '.repeat(300)}"indented": true\n  \`\`\`\n\nfenced words\n`);
    await waitForIngestion(app, 'nesting', admin);

    t.match(await document(deepList), { status: 'failed', error: 'parsing failed: Markdown line 69: lists or block quotes nested more than 64 levels deep are not supported' }, 'a list 3,000 levels deep');
    t.match(await document(deepQuote), { status: 'failed', error: /^parsing failed: Markdown line 1: .*nested more than 64 levels/ }, 'block quotes 5,000 deep');
    t.same(await found('zanzibar harbour'), [], 'nothing of the failed document is searchable');
    t.match(await document(deepest), { status: 'ready', error: null }, '64 levels are ingested');
    t.same(await found('level63'), [deepest], 'down to the deepest item');
    t.match(await document(fenced), { status: 'ready', error: null }, 'indentation inside fenced code is not nesting');
    t.same(await found('fenced words'), [fenced]);
  });
}
