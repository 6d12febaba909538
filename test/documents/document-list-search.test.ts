/**
 * The document list's `q` ignores case, accents and compatibility forms in filenames and titles
 * ("resume" finds "Résumé Müller.txt"), and stays literal about `%`, `_`, `\`, `'` and `?`.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const FILES: Array<[string, string, string]> = [
  ['Résumé Müller.txt', 'Work history of a baker.', 'text/plain'],
  ['resume-plain.txt', 'A plain resume.', 'text/plain'],
  ['ﬁnance ＱＵＡＲＴＥＲ.txt', 'Quarterly figures.', 'text/plain'],
  ['menu.md', '# Crème brûlée and Café\n\nDesserts of the house.', 'text/markdown'],
  ["100%_sure it's?.txt", 'Odd characters in the name.', 'text/plain'],
];

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'names' });
    for (const [filename, content, contentType] of FILES) {
      const body = multipartUpload([{ filename, content, contentType }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/names/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body);
    }
    const documents = await waitForIngestion(app, 'names', admin);
    t.ok(documents.every((document) => document.status === 'ready'), 'all ingested');
    const search = async (q: string) => {
      const response = await app.inject({ url: `/v1/collections/names/documents?sort=filename&order=asc&q=${encodeURIComponent(q)}`, headers: admin });
      t.equal(response.statusCode, 200, response.body);
      return (response.json().data as Array<{ filename: string }>).map((document) => document.filename);
    };

    t.same(await search('resume'), ['resume-plain.txt', 'Résumé Müller.txt'].sort(), 'accents and case ignored');
    t.same(await search('RÉSUMÉ'), ['resume-plain.txt', 'Résumé Müller.txt'].sort(), 'in the query as well');
    t.same(await search('muller'), ['Résumé Müller.txt']);
    t.same(await search('Mu\u0308ller'), ['Résumé Müller.txt'], 'a decomposed ü in the query');
    t.same(await search('finance quarter'), ['ﬁnance ＱＵＡＲＴＥＲ.txt'], 'a ligature and full-width letters in the name');
    t.same(await search('creme brulee'), ['menu.md'], 'the title (its first heading) is searched too');
    t.same(await search('%_sure'), ["100%_sure it's?.txt"], '% and _ are literal');
    t.same(await search("it's?"), ["100%_sure it's?.txt"], "' and ? are literal");
    t.same(await search('%'), ["100%_sure it's?.txt"], '% alone matches only a name holding one');
    t.same(await search('_'), ["100%_sure it's?.txt"], '_ alone as well');
    t.same(await search('\\'), [], '\\ is literal (an uploaded name keeps no backslash: it is read as a path)');
    t.same(await search('résumés'), [], 'no match');

    // Every document is ready: the sort leaves them all tied, and their ids order them, so pages
    // neither repeat nor skip one.
    for (const order of ['asc', 'desc'] as const) {
      const paged: string[] = [];
      for (const offset of [0, 2, 4]) {
        const response = await app.inject({ url: `/v1/collections/names/documents?sort=status&order=${order}&limit=2&offset=${offset}`, headers: admin });
        paged.push(...(response.json().data as Array<{ id: string }>).map((document) => document.id));
      }
      const byId = documents.map((document) => document.id).sort();
      t.same(paged, order === 'asc' ? byId : byId.reverse(), `sort=status&order=${order}: ties in ${order}ending id order, page by page`);
    }
  });
}
