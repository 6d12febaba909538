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
  });
}
