/**
 * Through the API: a chunk's metadata says what it holds, `element_types` (the types of the
 * elements it has text of) and `code_languages` (its code blocks' languages by GitHub Linguist's
 * names, lower-cased, with the tag as written when it differs), so a query can ask for code only,
 * for Python examples only however their fences are tagged, or for prose without code, in every
 * mode. Upload metadata wins over both; front matter does not.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const guide = `---
code_languages: [cobol]
---
# Overview

Pilots connect the harbour client before a ship enters the channel.

# Python client

Connect the harbour client from Python:

\`\`\`py
import harbour
harbour.connect("channel")
\`\`\`

# Shell

Connect the harbour client from a shell:

\`\`\`Bash
harbour-cli connect channel
\`\`\`

# Berths

| Harbour city | Berths |
| --- | --- |
| Oslo | 3 |
| Riga | 5 |
`;
const page = `<html><body><h1>Rust client</h1><p>Connect the harbour client from Rust:</p>
<pre><code class="language-rust">let client = harbour::connect("channel");</code></pre></body></html>`;

interface Chunk { text: string; metadata: Record<string, unknown> }

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'manuals' });
    const upload = async (filename: string, content: string, contentType: string, metadata?: Record<string, unknown>) => {
      const body = multipartUpload([{ filename, content, contentType }], metadata ? { metadata: JSON.stringify(metadata) } : {});
      const response = await app.inject({ method: 'POST', url: '/v1/collections/manuals/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const guideId = await upload('guide.md', guide, 'text/markdown');
    const pageId = await upload('rust.html', page, 'text/html');
    const labelledId = await upload('labelled.md', '# Labelled\n\nConnect the harbour client by hand.\n', 'text/markdown', { element_types: 'handbook' });
    const documents = await waitForIngestion(app, 'manuals', admin);
    t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready']);
    const chunksOf = async (id: string): Promise<Chunk[]> =>
      (await app.inject({ url: `/v1/collections/manuals/documents/${id}/chunks?limit=100`, headers: admin })).json().data;
    const sectionOf = (chunk: { metadata: Record<string, unknown> }) => (chunk.metadata.heading_path as string[])[0];

    await t.test('chunk metadata names the element types and code languages it holds', async (t) => {
      const contents = (await chunksOf(guideId)).map((chunk) => [sectionOf(chunk), chunk.metadata.element_types, chunk.metadata.code_languages]);
      t.same(contents, [
        ['Overview', ['heading', 'paragraph'], undefined],
        ['Python client', ['heading', 'paragraph', 'code'], ['python', 'py']],
        ['Shell', ['heading', 'paragraph', 'code'], ['shell', 'bash']],
        ['Berths', ['heading', 'table'], undefined],
      ], 'front matter `code_languages` does not pass for the chunks\' own; a tag is named by its language, lower-cased, and kept as written');
      t.same((await chunksOf(pageId)).map((chunk) => [chunk.metadata.element_types, chunk.metadata.code_languages]), [[['heading', 'paragraph', 'code'], ['rust']]], 'HTML: the language of <code class="language-rust">');
      t.same((await chunksOf(labelledId))[0]!.metadata.element_types, 'handbook', 'the upload metadata wins');
    });

    await t.test('queries filter on them in every mode', async (t) => {
      for (const mode of ['semantic', 'keyword', 'hybrid']) {
        const sections = async (filters: Record<string, unknown>) => {
          const response = await app.inject({ method: 'POST', url: '/v1/collections/manuals/query', headers: admin, payload: { query: 'connect the harbour client', search_mode: mode, filters, min_score: 0, skip_cache: true } });
          t.equal(response.statusCode, 200, response.body);
          return (response.json().results as Chunk[]).map(sectionOf).sort();
        };
        t.same(await sections({ code_languages: 'python' }), ['Python client'], `${mode}: Python examples only, fenced as \`py\``);
        t.same(await sections({ code_languages: 'shell' }), ['Shell'], `${mode}: shell examples, fenced as \`Bash\``);
        t.same(await sections({ code_languages: { $in: ['bash', 'rust'] } }), ['Rust client', 'Shell'], `${mode}: shell or Rust examples`);
        t.same(await sections({ element_types: 'code' }), ['Python client', 'Rust client', 'Shell'], `${mode}: chunks holding code`);
        t.same(await sections({ element_types: { $ne: 'code' }, code_languages: { $exists: false } }), ['Berths', 'Labelled', 'Overview'], `${mode}: prose and tables without code`);
      }
    });

    await t.test('chunks of one section each say what they hold', async (t) => {
      await createTestCollection(app, admin, { name: 'small', chunk_size: 200, chunk_overlap: 0, chunk_strategy: 'paragraph' });
      const prose = 'Pilots connect the harbour client before a ship enters the channel, and again after each change of berth or of the tide table.';
      const code = 'const client = harbour.connect("channel");\nclient.watch("tide", (level) => client.report(level));\nclient.close();';
      const body = multipartUpload([{ filename: 'long.md', content: `# Long\n\n${prose}\n\n\`\`\`js\n${code}\n\`\`\`\n`, contentType: 'text/markdown' }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/small/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      await waitForIngestion(app, 'small', admin);
      const chunks = (await app.inject({ url: `/v1/collections/small/documents/${response.json().id}/chunks`, headers: admin })).json().data as Chunk[];
      t.same(chunks.map((chunk) => [chunk.metadata.heading_path, chunk.metadata.element_types, chunk.metadata.code_languages]), [
        [['Long'], ['heading', 'paragraph'], undefined],
        [['Long'], ['code'], ['javascript', 'js']],
      ]);
    });
  });
}
