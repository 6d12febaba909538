/**
 * Through the API: HTML hidden by an inline style is not indexed (as the `hidden` attribute and
 * `aria-hidden` are not), and JSON nested past 128 levels fails at the parsing stage saying so,
 * where it failed with "Maximum call stack size exceeded".
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'edges' });
    const upload = async (filename: string, content: string, contentType: string) => {
      const body = multipartUpload([{ filename, content, contentType }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/edges/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
      return response.json().id as string;
    };
    const page = await upload('hidden.html', `<h1>Harbour</h1><p hidden>attributehidden</p><p style="display: none">styledaway</p>
<div style="color: red; visibility:hidden !important">invisiblewords</div><p style="display:block">shownwords</p>`, 'text/html');
    const deep = await upload('deep.json', `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`, 'application/json');
    await waitForIngestion(app, 'edges', admin);
    const found = async (query: string) => ((await app.inject({
      method: 'POST', url: '/v1/collections/edges/query', headers: admin, payload: { query, search_mode: 'keyword', skip_cache: true },
    })).json().results as Array<{ document_id: string }>).map((result) => result.document_id);

    t.same(await found('shownwords'), [page], 'shown text is found');
    for (const hidden of ['attributehidden', 'styledaway', 'invisiblewords']) t.same(await found(hidden), [], `${hidden}: hidden text is not indexed`);
    const failed = (await app.inject({ url: `/v1/collections/edges/documents/${deep}`, headers: admin })).json();
    t.match(failed, { status: 'failed', error: /^parsing failed: JSON: values nested more than 128 levels deep are not supported/, progress: { stage: 'parsing' } });
  });
}
