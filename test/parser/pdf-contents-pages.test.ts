/**
 * Through the API: a PDF's table of contents, often set in the headings' size, does not become
 * headings (it put "2 Naming . . . . 6" into the heading paths of the chunks after it), and front
 * matter numbered in roman numerals loses its page numbers as arabic ones do.
 */
import t from 'tap';
import { buildPdf } from '../support/document-fixtures.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'manuals' });
    const pdf = await buildPdf({
      pages: [
        { heading: 'Contents', contents: ['1 Pilots . . . . . . . . . . . . 2', '2 Safety . . . . . . . . . . . . 3'], paragraphs: [], footer: 'ii' },
        { heading: 'Pilots', paragraphs: ['Pilots guide ships through the channel.'], footer: '2' },
        { heading: 'Safety', paragraphs: ['Lifebuoys hang at every berth.'], footer: '3' },
      ],
    });
    const body = multipartUpload([{ filename: 'manual.pdf', content: pdf, contentType: 'application/pdf' }]);
    const id = (await app.inject({ method: 'POST', url: '/v1/collections/manuals/documents', headers: { ...admin, ...body.headers }, payload: body.payload })).json().id as string;
    const [document] = await waitForIngestion(app, 'manuals', admin);
    t.equal(document!.status, 'ready');
    const elements = (await app.inject({ url: `/v1/collections/manuals/documents/${id}/elements`, headers: admin })).json().data as Array<{ type: string; text: string; heading_path: string[] }>;
    t.same(elements.map((element) => [element.type, element.text, element.heading_path]), [
      ['heading', 'Contents', []],
      ['paragraph', '1 Pilots . . . . . . . . . . . . 2 2 Safety . . . . . . . . . . . . 3', ['Contents']],
      ['heading', 'Pilots', []],
      ['paragraph', 'Pilots guide ships through the channel.', ['Pilots']],
      ['heading', 'Safety', []],
      ['paragraph', 'Lifebuoys hang at every berth.', ['Safety']],
    ], 'contents entries are text under their heading; no page number, roman or arabic, is left');
  });
}
