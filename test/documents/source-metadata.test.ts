/**
 * Through the API: what a file says about itself (Markdown front matter, a PDF's page count and
 * Info dictionary, an HTML page's <meta> tags, a Word file's core properties) is the
 * document's `source_metadata`, and its filterable values are on every chunk, so queries in every
 * mode can filter on them. Upload metadata wins over them on chunks; nested maps, long strings and
 * a key named like a chunk's own stay on the document.
 */
import t from 'tap';
import { buildDocx, buildPdf } from '../support/document-fixtures.js';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const longSummary = 'x'.repeat(1200);
const post = `---
title: Harbour notes
author: Ada
tags: [pilots, tides]
draft: false
weight: 3
page: 99
owner:
  team: docs
summary: ${longSummary}
---
# Harbour notes

Pilots guide ships through the channel at high tide.
`;
const page = `<html><head><title>Quay rules</title>
<meta name="author" content="Harbour  Master"><meta name="keywords" content="quay, safety; quay">
<meta name="description" content="Rules for the quay"></head>
<body><p>Pilots keep the quay clear for ships.</p></body></html>`;
const plain = '# Channel\n\nPilots guide ships through the channel at low tide.\n';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'harbour' });
    const upload = async (filename: string, content: string | Buffer, contentType: string, fields: Record<string, string> = {}) => {
      const body = multipartUpload([{ filename, content, contentType }], fields);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/harbour/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, `${filename} accepted`);
      return response.json().id as string;
    };
    const postId = await upload('post.md', post, 'text/markdown', { metadata: JSON.stringify({ author: 'uploader' }) });
    const plainId = await upload('plain.md', plain, 'text/markdown');
    const pageId = await upload('quay.html', page, 'text/html');
    const wordId = await upload('handbook.docx', await buildDocx({ creator: 'Harbour Office', keywords: 'pilots; safety' }), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    const pdfId = await upload('manual.pdf', await buildPdf({ author: 'Port Authority', keywords: ['berths', 'tides'], pages: [
      { heading: 'Berths', paragraphs: ['Pilots moor ships at every berth.'] },
      { heading: 'Tides', paragraphs: ['Pilots post tide tables at the harbour office.'] },
    ] }), 'application/pdf');
    const documents = await waitForIngestion(app, 'harbour', admin);
    t.same(documents.map((document) => document.status), ['ready', 'ready', 'ready', 'ready', 'ready']);

    const document = async (id: string) => (await app.inject({ url: `/v1/collections/harbour/documents/${id}`, headers: admin })).json();
    const postDocument = await document(postId);
    t.same(postDocument.source_metadata, {
      title: 'Harbour notes', author: 'Ada', tags: ['pilots', 'tides'], draft: false, weight: 3, page: 99, owner: { team: 'docs' }, summary: longSummary,
    }, 'the whole front matter, nested map and list included, is the document\'s source metadata');
    t.same(postDocument.metadata, { author: 'uploader' }, 'the upload metadata is kept apart');
    t.same((await document(plainId)).source_metadata, {}, 'a file without front matter says nothing of itself');
    t.same((await document(pdfId)).source_metadata, { pages: 2, author: 'Port Authority', keywords: ['berths', 'tides'] }, 'a PDF: pages and its Info dictionary');
    t.match((await document(wordId)).source_metadata, { author: 'Harbour Office', keywords: ['pilots', 'safety'], created_at: /^\d{4}-\d{2}-\d{2}T/ }, 'a Word file: its core properties');
    t.same((await document(pageId)).source_metadata, { author: 'Harbour Master', description: 'Rules for the quay', keywords: ['quay', 'safety'] }, 'an HTML page: its <meta> tags');

    const chunks = async (id: string) => (await app.inject({ url: `/v1/collections/harbour/documents/${id}/chunks`, headers: admin })).json().data as Array<{ metadata: Record<string, unknown> }>;
    t.same((await chunks(postId))[0]!.metadata, {
      title: 'Harbour notes', author: 'uploader', tags: ['pilots', 'tides'], draft: false, weight: 3, heading_path: ['Harbour notes'], element_types: ['heading', 'paragraph'],
    }, 'chunks carry the filterable values; the upload metadata wins; nested maps, long strings and `page` stay on the document');
    t.same((await chunks(pdfId)).map((chunk) => [chunk.metadata.page, chunk.metadata.pages, chunk.metadata.author]), [[1, 2, 'Port Authority'], [2, 2, 'Port Authority']], 'a PDF chunk keeps its own page beside the page count');

    for (const mode of ['semantic', 'keyword', 'hybrid']) {
      const query = async (filters: Record<string, unknown>) => {
        const response = await app.inject({
          method: 'POST', url: '/v1/collections/harbour/query', headers: admin,
          payload: { query: 'pilots guide ships through the channel', search_mode: mode, top_k: 10, filters, skip_cache: true },
        });
        t.equal(response.statusCode, 200);
        return [...new Set((response.json().results as Array<{ document_id: string }>).map((result) => result.document_id))];
      };
      t.same(await query({ tags: 'tides' }), [postId], `${mode}: a front matter list filters by any of its elements`);
      t.same(await query({ draft: false }), [postId], `${mode}: a front matter boolean filters`);
      t.same(await query({ author: 'Ada' }), [], `${mode}: the uploaded author, not the file's, is on the chunks`);
      t.same(await query({ pages: { $gte: 2 } }), [pdfId], `${mode}: the PDF page count filters`);
      // The Word file's text shares no word with the query, so BM25 alone does not find it.
      const withKeywords = mode === 'keyword' ? [pageId, pdfId] : [pageId, pdfId, wordId];
      t.same((await query({ keywords: { $in: ['safety', 'tides'] } })).sort(), withKeywords.sort(), `${mode}: keywords of an HTML page, a PDF and a Word file filter`);
    }
  });
}
