/**
 * A file with nothing to search (only whitespace, a page of scripts, an empty DOCX or deck) fails
 * at parsing saying so; it ended `ready` with 0 chunks, and nothing told its uploader why it was
 * never found.
 */
import { Document, Packer } from 'docx';
import t from 'tap';
import { buildPdf } from '../support/document-fixtures.js';
import { buildPptx } from '../support/pptx-fixture.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'blank' });
    const upload = async (filename: string, content: string | Buffer, contentType?: string) => {
      const body = multipartUpload([{ filename, content, ...(contentType ? { contentType } : {}) }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/blank/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const blank = [
      await upload('spaces.txt', ' \n\n\t \n', 'text/plain'),
      await upload('scripts.html', '<html><head><title>Dashboard</title><script>render()</script></head><body></body></html>', 'text/html'),
      await upload('nothing.docx', await Packer.toBuffer(new Document({ sections: [{ children: [] }] }))),
      // A page that is only a picture, as a scanner makes it.
      await upload('scan.pdf', await buildPdf({ pages: [{ paragraphs: [], image: true }] })),
      // Slides of screenshots: a title placeholder left empty and nothing else to read.
      await upload('screenshots.pptx', buildPptx({ slides: [{ shapes: [{ kind: 'title', lines: [] }] }, { shapes: [] }] })),
    ];
    const text = await upload('words.txt', 'Harbour pilots guide ships through the channel.', 'text/plain');
    await waitForIngestion(app, 'blank', admin);
    const read = async (id: string) => (await app.inject({ url: `/v1/collections/blank/documents/${id}`, headers: admin })).json();
    for (const id of blank) {
      const document = await read(id);
      // OCR is named only for formats that hold scans: "a scanned PDF" read oddly for a text file.
      const ocr = /\.(?:docx|pdf|pptx)$/.test(document.filename) ? ' (scanned pages and pictures need OCR first, which the service does not do)' : '';
      t.match(document, {
        status: 'failed', chunk_count: 0, progress: { stage: 'parsing' },
        error: `parsing failed: the file holds no text to index${ocr}`,
      }, `${document.filename} fails saying why`);
    }
    t.match(await read(text), { status: 'ready', chunk_count: 1, error: null, progress: { stage: 'done', message: '1 chunk indexed' } }, 'a file with text is indexed');
  });
}
