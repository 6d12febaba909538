/**
 * Word footnotes and endnotes are indexed without the arrow mammoth ends each with, a link back to
 * its reference: it read as the note's last word.
 */
import { Document, EndnoteReferenceRun, FootnoteReferenceRun, Packer, Paragraph, TextRun } from 'docx';
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'notes' });
    const document = new Document({
      footnotes: { 1: { children: [new Paragraph('Sea otters hold hands while they sleep.')] } },
      sections: [{ children: [new Paragraph({ children: [new TextRun('Otters rest in kelp forests.'), new FootnoteReferenceRun(1)] })] }],
    });
    const body = multipartUpload([{ filename: 'otters.docx', content: await Packer.toBuffer(document) }]);
    const uploaded = await app.inject({ method: 'POST', url: '/v1/collections/notes/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
    t.equal(uploaded.statusCode, 202, uploaded.body);
    const [ingested] = await waitForIngestion(app, 'notes', admin);
    t.equal(ingested!.status, 'ready', ingested!.error ?? '');
    const elements = (await app.inject({ url: `/v1/collections/notes/documents/${ingested!.id}/elements`, headers: admin })).json().data as Array<{ text: string }>;
    const note = elements.find((element) => element.text.includes('Sea otters'));
    t.ok(note, 'the footnote is indexed');
    t.notMatch(note!.text, /\u2191/, 'without the arrow back to its reference');
    t.match(note!.text, /Sea otters hold hands while they sleep\.$/);
    const chunks = (await app.inject({ url: `/v1/collections/notes/documents/${ingested!.id}/chunks`, headers: admin })).json().data as Array<{ text: string }>;
    t.notOk(chunks.some((chunk) => chunk.text.includes('\u2191')), 'no chunk holds the arrow');

    const withEndnote = new Document({
      endnotes: { 1: { children: [new Paragraph('River otters den in banks.')] } },
      sections: [{ children: [new Paragraph({ children: [new TextRun('Otters swim in rivers.'), new EndnoteReferenceRun(1)] })] }],
    });
    const endnoteBody = multipartUpload([{ filename: 'river.docx', content: await Packer.toBuffer(withEndnote) }]);
    const endnoteUpload = await app.inject({ method: 'POST', url: '/v1/collections/notes/documents', headers: { ...admin, ...endnoteBody.headers }, payload: endnoteBody.payload });
    t.equal(endnoteUpload.statusCode, 202, endnoteUpload.body);
    await waitForIngestion(app, 'notes', admin);
    const endnoteElements = (await app.inject({ url: `/v1/collections/notes/documents/${endnoteUpload.json().id}/elements`, headers: admin })).json().data as Array<{ text: string }>;
    const endnote = endnoteElements.find((element) => element.text.includes('River otters'));
    t.ok(endnote, 'an endnote is indexed');
    t.match(endnote!.text, /River otters den in banks\.$/, 'without the arrow either');
  });
}
