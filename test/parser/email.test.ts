/**
 * Saved email messages (.eml) through the API: subject, sender, recipients and date are read
 * (encoded headers and bodies decoded), the plain-text body preferred over the HTML one,
 * attachments named; a message with only an HTML body is read as a web page.
 */
import t from 'tap';
import { buildPdf, buildPng } from '../support/document-fixtures.js';
import { adminTestApp, createTestCollection, testBackends, uploadDocument, waitForIngestion } from '../support/test-app.js';

interface Element { type: string; text: string; heading_path: string[] }

/**
 * Multipart: a plain-text and an HTML body, a PDF and a program attached; the subject encoded as
 * RFC 2047 words, the text as quoted-printable.
 */
const dredgingMail = (pdf: Buffer) => [
  'From: "Ada Lovelace" <ada@harbour.example>',
  'To: Port Board <board@harbour.example>, pilots@harbour.example',
  'Cc: Grace Hopper <grace@harbour.example>',
  `Subject: =?UTF-8?B?${Buffer.from('Dredging of berth 3 – schedule').toString('base64')}?=`,
  'Date: Tue, 03 Mar 2026 09:15:00 +0100',
  'Message-ID: <dredging-1@harbour.example>',
  'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="outer"',
  '',
  '--outer',
  'Content-Type: multipart/alternative; boundary="inner"',
  '',
  '--inner',
  'Content-Type: text/plain; charset=utf-8',
  'Content-Transfer-Encoding: quoted-printable',
  '',
  'Dredging of berth 3 starts on 16 March and lasts three weeks =E2=80=93 ferries=',
  ' move to the north quay.',
  '',
  'The contractor asks for a pilot on each tow.',
  '--inner',
  'Content-Type: text/html; charset=utf-8',
  '',
  '<html><body><table><tr><td><p>Dredging of berth 3 starts on 16 March.</p></td></tr></table></body></html>',
  '--inner--',
  '--outer',
  'Content-Type: application/pdf; name="schedule.pdf"',
  'Content-Disposition: attachment; filename="schedule.pdf"',
  'Content-Transfer-Encoding: base64',
  '',
  pdf.toString('base64').replace(/.{76}/g, '$&\r\n'),
  '--outer',
  'Content-Type: image/png; name="berth-map.png"',
  'Content-Disposition: attachment; filename="berth-map.png"',
  'Content-Transfer-Encoding: base64',
  '',
  buildPng().toString('base64'),
  '--outer',
  'Content-Type: application/octet-stream; name="tool.exe"',
  'Content-Disposition: attachment; filename="tool.exe"',
  'Content-Transfer-Encoding: base64',
  '',
  Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03, 0x00, 0x00, 0x00]).toString('base64'),
  '--outer--',
  '',
].join('\r\n');

const HTML_ONLY_MAIL = [
  'From: newsletter@harbour.example',
  'Subject: Harbour news',
  'Content-Type: text/html; charset=utf-8',
  '',
  '<html><body><h2>Tides</h2><p>Spring tides peak on Friday.</p><script>track()</script></body></html>',
  '',
].join('\r\n');

// Once more on the thread large files are parsed on: the attachments' bytes cross it too.
const runs = testBackends().flatMap((backend) => (backend === 'pglite' ? [[backend, 'inline'], [backend, 'on threads']] : [[backend, 'inline']]));
for (const [backend, where] of runs as Array<[ReturnType<typeof testBackends>[number], string]>) {
  t.test(`${backend}, parsed ${where}`, async (t) => {
    const { app, admin } = await adminTestApp(t, backend, where === 'on threads' ? { parseOnThreadMinBytes: 0 } : {});
    const documentOf = async (id: string) => (await app.inject({ url: `/v1/collections/mail/documents/${id}`, headers: admin })).json();
    const elementsOf = async (id: string) => (await app.inject({ url: `/v1/collections/mail/documents/${id}/elements`, headers: admin })).json().data as Element[];
    await createTestCollection(app, admin, { name: 'mail' });

    await t.test('a message: subject, people and date, the plain-text body, then the attachments', async (t) => {
      const schedule = await buildPdf({ pages: [{ heading: 'Dredging schedule', paragraphs: ['Week 1: the dredger Van Gogh works the south side of berth 3.'] }] });
      const created = await uploadDocument(app, admin, 'mail', { filename: 'dredging.eml', content: dredgingMail(schedule), contentType: 'message/rfc822' });
      t.equal(created.statusCode, 202, created.body);
      const untyped = await uploadDocument(app, admin, 'mail', { filename: 'news.eml', content: HTML_ONLY_MAIL, contentType: 'application/octet-stream' });
      t.equal(untyped.statusCode, 202, untyped.body);
      t.equal(untyped.json().content_type, 'message/rfc822', 'known by its extension');
      const documents = await waitForIngestion(app, 'mail', admin);
      t.same(documents.map((document) => document.status), ['ready', 'ready'], JSON.stringify(documents.map((document) => document.error)));

      const id = created.json().id as string;
      const document = await documentOf(id);
      t.equal(document.title, 'Dredging of berth 3 – schedule', 'the encoded subject, decoded');
      t.match(document.source_metadata, {
        author: 'Ada Lovelace <ada@harbour.example>',
        created_at: '2026-03-03T08:15:00.000Z',
        to: ['Port Board <board@harbour.example>', 'pilots@harbour.example'],
        cc: ['Grace Hopper <grace@harbour.example>'],
        message_id: '<dredging-1@harbour.example>',
        attachments: ['schedule.pdf', 'berth-map.png', 'tool.exe'],
        attachments_unread: [/^tool\.exe: Unsupported file type: "tool\.exe" is EXE data/],
      });
      t.equal(document.source_metadata.attachments_unread.length, 1, 'a picture is no unread attachment');
      const elements = await elementsOf(id);
      const subjectPath = ['Dredging of berth 3 – schedule'];
      t.same(elements.map((element) => [element.type, element.text, element.heading_path]), [
        ['heading', 'Dredging of berth 3 – schedule', []],
        ['paragraph', 'From: Ada Lovelace <ada@harbour.example>\nTo: Port Board <board@harbour.example>, pilots@harbour.example\nCc: Grace Hopper <grace@harbour.example>\nDate: 2026-03-03T08:15:00.000Z', subjectPath],
        ['paragraph', 'Dredging of berth 3 starts on 16 March and lasts three weeks – ferries move to the north quay.', subjectPath],
        ['paragraph', 'The contractor asks for a pilot on each tow.', subjectPath],
        ['heading', 'schedule.pdf', []],
        ['heading', 'Dredging schedule', ['schedule.pdf']],
        ['paragraph', 'Week 1: the dredger Van Gogh works the south side of berth 3.', ['schedule.pdf', 'Dredging schedule']],
        ['image', 'berth-map.png', []],
      ], 'the plain-text body, quoted-printable decoded, the HTML copy of it left out; the attached PDF after it, under its name');

      const query = await app.inject({ method: 'POST', url: '/v1/collections/mail/query', headers: admin, payload: { query: 'mail from Grace about dredging', search_mode: 'keyword' } });
      t.equal(query.json().results[0]?.document_id, id, 'found by who sent and received it');
      const attachment = await app.inject({ method: 'POST', url: '/v1/collections/mail/query', headers: admin, payload: { query: 'dredger Van Gogh', search_mode: 'keyword' } });
      t.match(attachment.json().results[0], { document_id: id, metadata: { heading_path: ['schedule.pdf', 'Dredging schedule'] } }, 'and by what its attachment says');

      const newsElements = await elementsOf(untyped.json().id);
      t.same(newsElements.map((element) => [element.type, element.text, element.heading_path]), [
        ['heading', 'Harbour news', []],
        ['paragraph', 'From: newsletter@harbour.example', ['Harbour news']],
        ['heading', 'Tides', ['Harbour news']],
        ['paragraph', 'Spring tides peak on Friday.', ['Harbour news', 'Tides']],
      ], 'an HTML-only message is read as a web page, scripts dropped');
      const news = await documentOf(untyped.json().id);
      t.notOk('cc' in news.source_metadata || 'to' in news.source_metadata, 'no To or Cc header, no key');
    });

    await t.test('a message without a subject: no title, and no blank heading above its text', async (t) => {
      const created = await uploadDocument(app, admin, 'mail', { filename: 'untitled.eml', content: HTML_ONLY_MAIL.replace('Subject: Harbour news\r\n', ''), contentType: 'message/rfc822' });
      t.equal(created.statusCode, 202, created.body);
      await waitForIngestion(app, 'mail', admin);
      const id = created.json().id as string;
      const document = await documentOf(id);
      t.equal(document.status, 'ready', document.error ?? '');
      t.equal(document.title, null);
      const elements = await elementsOf(id);
      t.same(elements.map((element) => [element.type, element.text, element.heading_path]), [
        ['paragraph', 'From: newsletter@harbour.example', []],
        ['heading', 'Tides', []],
        ['paragraph', 'Spring tides peak on Friday.', ['Tides']],
      ]);
    });
  });
}
