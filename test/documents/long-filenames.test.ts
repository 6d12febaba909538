/**
 * A client file name over 1,024 characters is cut to that length before its extension, which
 * stays: the parser is chosen by it, and a reader recognises the file by it.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'named' });
    const longName = `${'harbour-report-'.repeat(150)}.json`;
    const body = multipartUpload([{ filename: longName, content: '{"city": "Oslo", "berths": 4}', contentType: 'application/octet-stream' }]);
    const response = await app.inject({ method: 'POST', url: '/v1/collections/named/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
    t.equal(response.statusCode, 202, response.body.slice(0, 200));
    const filename = response.json().filename as string;
    t.equal(filename.length, 1024, 'at most 1,024 characters');
    t.ok(filename.endsWith('.json'), 'the extension kept');
    t.equal(filename.slice(0, -'.json'.length), longName.slice(0, 1024 - '.json'.length), 'cut before it');
    const [document] = await waitForIngestion(app, 'named', admin);
    t.equal(document!.status, 'ready');
    const elements = (await app.inject({ url: `/v1/collections/named/documents/${document!.id}/elements`, headers: admin })).json().data;
    t.same(elements.map((element: { text: string }) => element.text), ['city: Oslo', 'berths: 4'], 'parsed as JSON (one element per top-level key)');

    // 1,021 UTF-16 units before ".md" fall between the halves of an emoji: the cut keeps whole characters (it was a 500).
    const emojiName = `${'🎉'.repeat(1100)}.md`;
    const uploads = {
      single: { url: '/v1/collections/named/documents', name: (answer: any) => answer.filename },
      batch: { url: '/v1/collections/named/documents/batch', name: (answer: any) => answer.documents[0].filename },
    };
    for (const [how, { url, name }] of Object.entries(uploads)) {
      const emoji = multipartUpload([{ filename: emojiName, content: `# Party ${how}\n\nBalloons and streamers.`, contentType: 'text/markdown' }]);
      const answer = await app.inject({ method: 'POST', url, headers: { ...admin, ...emoji.headers }, payload: emoji.payload });
      t.equal(answer.statusCode, 202, `${how}: ${answer.body.slice(0, 200)}`);
      const cut = name(answer.json()) as string;
      t.equal(cut, `${'🎉'.repeat(510)}.md`, `${how}: whole emoji up to the limit, then the extension`);
      t.notOk(/[\ud800-\udbff](?![\udc00-\udfff])/.test(cut), `${how}: no half of a surrogate pair`);
    }
  });
}
