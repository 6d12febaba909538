/**
 * A table longer than a chunk: the chunks that continue it carry its header row as
 * `metadata.table_header` and are embedded with it, while their text stays the exact slice of the
 * table. Before, a continuation chunk was a list of values with no column names.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const cities = ['Lisbon', 'Oslo', 'Quito', 'Hanoi', 'Lagos', 'Perth', 'Lima', 'Cairo', 'Dakar', 'Riga', 'Sofia', 'Tunis'];
const markdownTable = [
  '# Harbours', '', 'Berths by city:', '',
  '| City | Berths | Deepest draught |', '| --- | --- | --- |',
  ...cities.map((city, index) => `| ${city} | ${index * 7 + 3} | ${index + 9} m |`),
].join('\n');
const htmlTable = (headerCells: string) => `<html><body><h1>Fleet</h1><table>${headerCells}${cities.map((city, index) => `<tr><td>${city}</td><td>${index * 3}</td></tr>`).join('')}</table></body></html>`;

interface Chunk { id: string; text: string; chunk_index: number; metadata: Record<string, unknown> }

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'tables', chunk_size: 120, chunk_overlap: 0 });
    const upload = async (filename: string, content: string, contentType: string, metadata?: Record<string, unknown>) => {
      const body = multipartUpload([{ filename, content, contentType }], metadata ? { metadata: JSON.stringify(metadata) } : {});
      const response = await app.inject({ method: 'POST', url: '/v1/collections/tables/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const chunksOf = async (id: string): Promise<Chunk[]> =>
      (await app.inject({ url: `/v1/collections/tables/documents/${id}/chunks?limit=100`, headers: admin })).json().data;

    const markdown = await upload('harbours.md', markdownTable, 'text/markdown');
    const withHeader = await upload('fleet.html', htmlTable('<thead><tr><th>Ship</th><th>Crew</th></tr></thead>'), 'text/html');
    const withoutHeader = await upload('plain.html', htmlTable(''), 'text/html');
    const uploadWins = await upload('own.md', markdownTable.replace('Harbours', 'Ports'), 'text/markdown', { table_header: 'mine' });
    const documents = await waitForIngestion(app, 'tables', admin);
    t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready', 'ready']);

    await t.test('Markdown: chunks after the first of a table name its header row', async (t) => {
      const chunks = await chunksOf(markdown);
      const tableChunks = chunks.filter((chunk) => cities.some((city) => chunk.text.includes(city)));
      t.ok(tableChunks.length >= 3, `the table spans ${tableChunks.length} chunks`);
      t.ok(tableChunks[0]!.text.includes('City | Berths | Deepest draught'), 'the first holds the header itself');
      t.notOk('table_header' in tableChunks[0]!.metadata);
      for (const chunk of tableChunks.slice(1)) {
        t.equal(chunk.metadata.table_header, 'City | Berths | Deepest draught', `chunk ${chunk.chunk_index}`);
        t.notOk(chunk.text.includes('City'), 'its text is the slice of the table, without the header');
      }
      t.notOk(chunks.some((chunk) => !tableChunks.includes(chunk) && 'table_header' in chunk.metadata), 'other chunks have none');
    });

    await t.test('HTML: a header row of th cells is named; a table without one names none', async (t) => {
      const named = (await chunksOf(withHeader)).filter((chunk) => chunk.metadata.table_header !== undefined);
      t.ok(named.length >= 1);
      t.same(new Set(named.map((chunk) => chunk.metadata.table_header)), new Set(['Ship | Crew']));
      t.same((await chunksOf(withoutHeader)).filter((chunk) => 'table_header' in chunk.metadata), [], 'a first row of data is not taken for a header');
    });

    await t.test('continuation chunks are embedded after their header row', async (t) => {
      const continuation = (await chunksOf(markdown)).find((chunk) => chunk.metadata.table_header !== undefined)!;
      const response = await app.inject({
        method: 'POST', url: '/v1/collections/tables/query', headers: admin,
        payload: { query: `${continuation.metadata.table_header as string}\n${continuation.text}`, search_mode: 'semantic', top_k: 1, skip_cache: true },
      });
      // own.md holds the same table, so its copy of this chunk may rank first on a tie.
      const [best] = response.json().results as Array<{ text: string; score: number }>;
      t.equal(best!.text, continuation.text);
      t.ok(best!.score > 0.999, `the header and the text are what was embedded (score ${best!.score})`);
    });

    await t.test('table_header filters results, and upload metadata wins over it', async (t) => {
      const response = await app.inject({
        method: 'POST', url: '/v1/collections/tables/query', headers: admin,
        payload: { query: 'Oslo Riga Tunis Lagos', search_mode: 'keyword', filters: { table_header: 'City | Berths | Deepest draught' }, top_k: 50, skip_cache: true },
      });
      const results = response.json().results as Array<{ document_id: string; metadata: Record<string, unknown> }>;
      t.ok(results.length >= 1);
      t.same(new Set(results.map((result) => result.document_id)), new Set([markdown]));
      t.ok((await chunksOf(uploadWins)).every((chunk) => chunk.metadata.table_header === 'mine'), 'the upload sent its own table_header');
    });
  });
}

for (const backend of testBackends()) {
  t.test(`${backend}: a "|" inside a cell`, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'pipes' });
    const upload = async (filename: string, content: string, contentType: string) => {
      const body = multipartUpload([{ filename, content, contentType }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/pipes/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const tableText = async (id: string) => {
      const elements = (await app.inject({ url: `/v1/collections/pipes/documents/${id}/elements`, headers: admin })).json().data as Array<{ type: string; text: string }>;
      return elements.find((element) => element.type === 'table')?.text;
    };
    const markdown = await upload('operators.md', '| Operator | Meaning |\n| --- | --- |\n| `a \\| b` | logical or |\n| `a & b` | logical and |', 'text/markdown');
    const html = await upload('operators.html', '<table><tr><th>Operator</th><th>Meaning</th></tr><tr><td>a | b</td><td>logical or</td></tr></table>', 'text/html');
    const csv = await upload('operators.csv', '1,a | b\n2,a & b\n', 'text/csv');
    await waitForIngestion(app, 'pipes', admin);
    // Written "a | b | logical or", the row read as three columns under a header of two.
    t.equal(await tableText(markdown), 'Operator | Meaning\na \\| b | logical or\na & b | logical and', 'Markdown');
    t.equal(await tableText(html), 'Operator | Meaning\na \\| b | logical or', 'HTML');
    t.match(await tableText(csv), /^1 \| a \\\| b$/m, 'CSV without a header');
  });
}
