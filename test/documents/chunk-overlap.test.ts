/**
 * The overlap a chunk opens with, through upload and GET .../chunks: whole rows of a table and whole
 * lines of code (a chunk opened mid-row under the table's header row, and code mid-line), and
 * between the packed paragraphs of the `paragraph` strategy, which shared nothing.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const tableRows = Array.from({ length: 8 }, (_, index) => `| ID-${index} | A description of item ${index} that goes on | ${index}00 NOK |`);
const codeLines = Array.from({ length: 10 }, (_, index) => `result_value_${index} = compute_something(alpha_${index}, beta_${index}, gamma)`);
const tablesAndCode = [
  '# Ledger', '', 'Amounts by item:', '',
  '| Identifier | Description | Amount |', '| --- | --- | --- |', ...tableRows, '',
  '## Script', '', '```python', ...codeLines, '```',
].join('\n');

const words = 'harbour crane berth draught pilot tug quay ballast cargo manifest tide anchor'.split(' ');
const longMarkdown = [
  '# Port handbook', '',
  ...Array.from({ length: 24 }, (_, index) => {
    const sentence = (offset: number) => Array.from({ length: 9 }, (_, word) => words[(index * 5 + offset + word * 7) % words.length]).join(' ');
    return `Rule ${index}: ${sentence(0)}. Then ${sentence(3)}.\n`;
  }),
].join('\n');

/** Wide enough that a sentence start in reach often has word starts before it. */
const PARAGRAPH_OVERLAP = 80;

interface Chunk { text: string; chunk_index: number; metadata: Record<string, unknown> }

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    const collections = [
      { name: 'rows-recursive', chunk_size: 200, chunk_overlap: 30, chunk_strategy: 'recursive' },
      { name: 'rows-paragraph', chunk_size: 200, chunk_overlap: 40, chunk_strategy: 'paragraph' },
      { name: 'paragraphs', chunk_size: 300, chunk_overlap: PARAGRAPH_OVERLAP, chunk_strategy: 'paragraph' },
      { name: 'headings', chunk_size: 200, chunk_overlap: 20, chunk_strategy: 'recursive' },
    ];
    for (const collection of collections) await createTestCollection(app, admin, collection);
    const upload = async (collection: string, filename: string, content: string): Promise<string> => {
      const body = multipartUpload([{ filename, content, contentType: 'text/markdown' }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${collection}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const chunksOf = async (collection: string, id: string): Promise<Chunk[]> => {
      const documents = await waitForIngestion(app, collection, admin);
      t.same(documents.map((document) => document.status), ['ready'], collection);
      return (await app.inject({ url: `/v1/collections/${collection}/documents/${id}/chunks?limit=200`, headers: admin })).json().data;
    };

    for (const collection of ['rows-recursive', 'rows-paragraph']) {
      await t.test(`${collection}: table and code chunks open on a whole row or line`, async (t) => {
        const chunks = await chunksOf(collection, await upload(collection, 'ledger.md', tablesAndCode));
        const tableChunks = chunks.filter((chunk) => chunk.text.includes('NOK'));
        const codeChunks = chunks.filter((chunk) => chunk.text.includes('compute_something'));
        t.ok(tableChunks.length >= 3 && codeChunks.length >= 3, `${tableChunks.length} table and ${codeChunks.length} code chunks`);
        for (const chunk of tableChunks.slice(1)) {
          t.match(chunk.text.split('\n')[0], /^\|? ?ID-\d+ \| A description of item \d+ that goes on \| \d+ NOK ?\|?$/, `chunk ${chunk.chunk_index} opens on a row`);
          t.not(chunk.metadata.table_header, undefined, `chunk ${chunk.chunk_index} names the header its rows line up with`);
        }
        for (const chunk of codeChunks) {
          const partial = chunk.text.split('\n').filter((line) => line.includes('compute_something') && !codeLines.includes(line));
          t.same(partial, [], `chunk ${chunk.chunk_index} holds whole lines of code`);
        }
      });
    }

    await t.test('paragraph strategy: neighbouring chunks share up to chunk_overlap characters, from a sentence start where one is in reach', async (t) => {
      const chunks = await chunksOf('paragraphs', await upload('paragraphs', 'handbook.md', longMarkdown));
      t.ok(chunks.length >= 6, `${chunks.length} chunks`);
      let sentencesOpened = 0;
      for (let index = 1; index < chunks.length; index++) {
        const previous = chunks[index - 1]!.text;
        const next = chunks[index]!.text;
        t.ok(next.length <= 300, `chunk ${index} within chunk_size`);
        // The longest start of this chunk that ends the previous one, cut where a word ends.
        let shared = 0;
        for (let length = Math.min(PARAGRAPH_OVERLAP, next.length); length > 0 && shared === 0; length--) {
          if (previous.endsWith(next.slice(0, length)) && /\s/.test(next[length] ?? ' ')) shared = length;
        }
        t.ok(shared >= 5, `chunk ${index} opens with the last ${shared} characters of chunk ${index - 1}`);
        t.match(previous[previous.length - shared - 1] ?? ' ', /\s/, `chunk ${index} opens on a word`);
        // A sentence that starts within the overlap is taken whole rather than from its first word in reach.
        const sentenceStart = [...previous.matchAll(/[.!?]\s+(?=\S)/g)].map((end) => end.index + end[0].length).find((start) => start >= previous.length - PARAGRAPH_OVERLAP);
        if (sentenceStart !== undefined) {
          sentencesOpened += 1;
          t.ok(next.startsWith(previous.slice(sentenceStart)), `chunk ${index} opens on the sentence its overlap holds`);
        }
      }
      t.ok(sentencesOpened > 0, `${sentencesOpened} chunks had a sentence start in reach`);
    });

    await t.test('a heading opens a chunk with the start of a paragraph too long to split on spaces', async (t) => {
      const chunks = await chunksOf('headings', await upload('headings', 'blob.md', `# L\n\n${'x'.repeat(4000)}\n`));
      t.equal(chunks[0]!.text.startsWith('L\n\nxxx'), true, `chunk 0 is ${JSON.stringify(chunks[0]!.text.slice(0, 10))}...`);
      t.ok(chunks.every((chunk) => chunk.text.length <= 200));
      t.ok(chunks.slice(1).every((chunk, index) => chunks[index]!.text.endsWith(chunk.text.slice(0, 20))), 'hard splits overlap by 20 characters');
    });
  });
}
