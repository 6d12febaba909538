/**
 * Multimodal collections through HTTP: image elements (HTML data: URIs, PDF pictures) kept as
 * files and served back with their content type; `multimodal: true` on a query adds the images of
 * each result's page or section; captions through the llm plugin contract when a model that reads
 * images is configured, and the reason recorded when none is.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ImageCaptioner } from '../../src/documents/image-captioner.js';
import { PluginRegistry } from '../../src/plugin-registry.js';
import type { ChatMessage, LanguageModel, PluginDefinition } from '../../src/plugins.js';
import { assertError } from '../support/assertions.js';
import { buildPdf, buildPng } from '../support/document-fixtures.js';
import { buildTestApp, multipartUpload, setupAdmin, testBackends, waitForIngestion, type TestApp } from '../support/test-app.js';

const PNG = buildPng(32, 24);
/** A picture the test model cannot describe. */
const BLURRED_PNG = buildPng(20, 20);
const TINY_PNG = buildPng(2, 2);
const BANNER_PNG = buildPng(40, 8);
const TRACKING_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/** A JPEG header of a picture stored 40 wide and 20 high whose EXIF turns it a quarter (orientation 6): shown 20 × 40. */
function turnedJpeg(): Buffer {
  const ifd = Buffer.from([0x00, 0x01, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]);
  const exif = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), Buffer.from('MM\0*', 'latin1'), Buffer.from([0, 0, 0, 8]), ifd]);
  const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, 0x00, exif.length + 2]), exif]);
  const sof0 = Buffer.from([0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 20, 0x00, 40, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app1, sof0, Buffer.from([0xff, 0xd9])]);
}

function page(images: { diagrams: Buffer; svg?: boolean }) {
  const svg = images.svg ? `<img alt="vector art" src="data:image/svg+xml;base64,${Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>').toString('base64')}">` : '';
  return `<!doctype html><html><head><title>Harbour atlas</title></head><body>
<h1>Harbour atlas</h1>
<h2>Tides</h2><p>The tide tables list high water at dawn and dusk for the inner harbour.</p>
<h2>Diagrams</h2><p>The quay layout shows where cranes unload the container ships.</p>
<img alt="quay layout" src="data:image/png;base64,${images.diagrams.toString('base64')}">${svg}
</body></html>`;
}

/** A model that reads images: it describes each by its content type, and fails on BLURRED_PNG. */
function visionPlugin(calls: ChatMessage[][]): PluginDefinition<'llm'> {
  const model: LanguageModel = {
    name: 'test-vision',
    vision: true,
    async complete(messages) {
      calls.push(messages);
      const image = messages.flatMap((message) => message.images ?? [])[0];
      if (!image) throw new Error('no image sent');
      if (image.data.equals(BLURRED_PNG)) throw new Error('the picture is too blurred to describe');
      return `A gradient swatch in ${image.contentType} format showing the marina.`;
    },
    async *stream() {
      yield '';
    },
  };
  return { kind: 'llm', name: 'test-vision', description: 'test model that reads images', create: () => model };
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const calls: ChatMessage[][] = [];
    const ctx = await buildTestApp(backend, { captionLlm: { plugin: 'test-vision', model: undefined, apiKey: undefined, baseUrl: undefined } });
    t.teardown(() => ctx.close());
    ctx.services.plugins.register(visionPlugin(calls) as PluginDefinition);
    const { app } = ctx;
    const admin = { cookie: await setupAdmin(app) };
    const collection = async (payload: Record<string, unknown>) => {
      const response = await app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload });
      t.equal(response.statusCode, 201, response.body.slice(0, 200));
      return response.json() as { id: string };
    };
    const upload = async (name: string, filename: string, content: string | Buffer, contentType: string) => {
      const body = multipartUpload([{ filename, content, contentType }]);
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${name}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, response.body.slice(0, 200));
      return response.json().id as string;
    };
    const elements = async (name: string, id: string) => (await app.inject({ url: `/v1/collections/${name}/documents/${id}/elements?limit=500`, headers: admin })).json().data;
    const query = async (name: string, payload: Record<string, unknown>) => {
      const response = await app.inject({ method: 'POST', url: `/v1/collections/${name}/query`, headers: admin, payload: { search_mode: 'keyword', skip_cache: true, ...payload } });
      t.equal(response.statusCode, 200, response.body.slice(0, 200));
      return response.json();
    };
    const elementFiles = (target: TestApp, collectionId: string, documentId: string) => {
      const dir = path.join(target.services.config.dataDir, 'files', collectionId, 'elements', documentId);
      return existsSync(dir) ? readdirSync(dir) : [];
    };

    const atlas = await collection({ name: 'atlas', multimodal_enabled: true, multimodal_enrichment_enabled: true });
    const pageId = await upload('atlas', 'atlas.html', page({ diagrams: PNG, svg: true }), 'text/html');
    const blurredId = await upload('atlas', 'blurred.html', page({ diagrams: BLURRED_PNG }).replace('Harbour atlas', 'Marina sketch'), 'text/html');
    await waitForIngestion(app, 'atlas', admin);

    await t.test('image elements are stored, listed with their picture and caption', async (t) => {
      const images = (await elements('atlas', pageId)).filter((element: any) => element.type === 'image');
      t.equal(images.length, 2);
      const [png, svg] = images;
      t.match(png, {
        text: /quay layout/, heading_path: ['Harbour atlas', 'Diagrams'], content_type: 'image/png', size_bytes: PNG.length,
        content_url: `/v1/collections/atlas/documents/${pageId}/elements/${png.id}/content`,
        caption: 'A gradient swatch in image/png format showing the marina.', caption_status: 'captioned', caption_error: null,
      });
      t.match(png.text, /marina/, 'the caption joins the element text');
      t.equal(svg.content_type, 'image/svg+xml');
      t.equal(elementFiles(ctx, atlas.id, pageId).length, 2, 'one stored file per image');
      const sent = calls.find((messages) => messages[0]?.images?.[0]?.data.equals(PNG));
      t.ok(sent, 'the picture itself went to the model through the llm contract');
      t.match(sent?.[0]?.content, /Describe this image/);

      const failed = (await elements('atlas', blurredId)).find((element: any) => element.type === 'image');
      t.match(failed, { caption: null, caption_status: 'failed', caption_error: /too blurred to describe/ }, 'a model failure is recorded, the document still ingests');
      const text = (await elements('atlas', pageId)).filter((element: any) => element.type !== 'image');
      t.ok(text.every((element: any) => !('content_url' in element)), 'text elements carry no picture fields');
    });

    await t.test('the picture is served back with its content type', async (t) => {
      const [png, svg] = (await elements('atlas', pageId)).filter((element: any) => element.type === 'image');
      const response = await app.inject({ url: png.content_url, headers: admin });
      t.equal(response.statusCode, 200);
      t.equal(response.headers['content-type'], 'image/png');
      t.equal(response.headers['x-content-type-options'], 'nosniff');
      t.ok(response.rawPayload.equals(PNG), 'the same bytes');
      const risky = await app.inject({ url: svg.content_url, headers: admin });
      t.equal(risky.statusCode, 200);
      t.equal(risky.headers['content-type'], 'application/octet-stream', 'SVG (which can carry script) is never served inline');
      t.equal(risky.headers['content-disposition'], 'attachment');

      const textElement = (await elements('atlas', pageId)).find((element: any) => element.type === 'paragraph');
      assertError(t, await app.inject({ url: `/v1/collections/atlas/documents/${pageId}/elements/${textElement.id}/content`, headers: admin }), 404, /no stored content/, 'a text element');
      assertError(t, await app.inject({ url: `/v1/collections/atlas/documents/${blurredId}/elements/${png.id}/content`, headers: admin }), 404, /not found/, 'an element of another document');
      assertError(t, await app.inject({ url: `/v1/collections/atlas/documents/${pageId}/elements/not-a-uuid/content`, headers: admin }), 400, undefined, 'not a uuid');
    });

    await t.test('multimodal: true adds the images of each result\'s section', async (t) => {
      const diagrams = await query('atlas', { query: 'cranes unload container ships', multimodal: true, top_k: 10 });
      const hit = diagrams.results.find((result: any) => result.document_id === pageId && /cranes/.test(result.text));
      t.ok(hit, 'the Diagrams section is found');
      t.same(hit.multimodal_elements.map((element: any) => element.content_type), ['image/png', 'image/svg+xml']);
      t.same(hit.multimodal_elements.map((element: any) => [element.width, element.height]), [[32, 24], [null, null]], 'a size, or null where the picture gives none (an SVG without width and height)');
      t.match(hit.multimodal_elements[0], { type: 'image', heading_path: ['Harbour atlas', 'Diagrams'], caption: /gradient swatch/, content_url: /\/content$/ });
      const tides = await query('atlas', { query: 'tide tables high water dawn', multimodal: true, top_k: 1 });
      t.same(tides.results[0].multimodal_elements, [], 'a section without pictures has none');
      const plain = await query('atlas', { query: 'cranes unload container ships' });
      t.ok(plain.results.every((result: any) => !('multimodal_elements' in result)), 'absent without multimodal: true');
      const captioned = await query('atlas', { query: 'gradient swatch marina' });
      t.ok(captioned.results.some((result: any) => result.document_id === pageId), 'an image is found by its caption');
    });

    await t.test('pictures carry their size; those under 16 pixels a side are left out', async (t) => {
      const picture = (alt: string, type: string, data: Buffer) => `<img alt="${alt}" src="data:${type};base64,${data.toString('base64')}">`;
      const id = await upload('atlas', 'newsletter.html', `<html><body><h1>Marina newsletter</h1>
<p>The slipway reopens on Monday after the winter repairs.</p>
${picture('slipway plan', 'image/png', PNG)}${picture('', 'image/gif', TRACKING_GIF)}${picture('', 'image/png', BANNER_PNG)}
${picture('check mark', 'image/png', TINY_PNG)}${picture('crane at dusk', 'image/jpeg', turnedJpeg())}
</body></html>`, 'text/html');
      const captionsBefore = calls.length;
      await waitForIngestion(app, 'atlas', admin);
      const images = (await elements('atlas', id)).filter((element: any) => element.type === 'image');
      t.same(images.map((element: any) => [element.text.replace(/\s+A gradient[\s\S]*$/, ''), element.metadata.width, element.metadata.height, element.content_type]), [
        ['slipway plan', 32, 24, 'image/png'],
        ['check mark', 2, 2, null],
        ['crane at dusk', 20, 40, 'image/jpeg'],
      ], 'the tracking pixel and the 8-pixel banner are gone; the check mark keeps its alt text without its picture; the JPEG is measured as shown');
      t.equal(images[1].content_url, null, 'no picture is stored for the check mark');
      t.equal(elementFiles(ctx, atlas.id, id).length, 2, 'two pictures stored');
      t.equal(calls.length - captionsBefore, 2, 'and two sent to the caption model');
      const slipway = await query('atlas', { query: 'slipway reopens winter repairs', multimodal: true, top_k: 1 });
      t.equal(slipway.results[0].document_id, id);
      t.same(slipway.results[0].multimodal_elements.map((element: any) => [element.width, element.height]), [[32, 24], [20, 40]], 'multimodal_elements say each picture\'s size');
    });

    await t.test('PDF pictures match results by page', async (t) => {
      const pdf = await buildPdf({
        pages: [
          { heading: 'Lighthouses', paragraphs: ['Lighthouse keepers trimmed the wick every evening.'] },
          { heading: 'Buoys', paragraphs: ['Red and green buoys mark the channel for arriving ships.'], image: true },
        ],
      });
      const id = await upload('atlas', 'guide.pdf', pdf, 'application/pdf');
      await waitForIngestion(app, 'atlas', admin);
      const images = (await elements('atlas', id)).filter((element: any) => element.type === 'image');
      t.equal(images.length, 1);
      t.match(images[0], { page: 2, content_type: 'image/png', caption_status: 'captioned' });
      const buoys = await query('atlas', { query: 'buoys mark the channel', multimodal: true, top_k: 3 });
      const onPage2 = buoys.results.find((result: any) => result.document_id === id && result.metadata.page === 2);
      t.ok(onPage2, 'the page-2 chunk is found');
      t.same(onPage2.multimodal_elements.map((element: any) => element.page), [2]);
      const keepers = await query('atlas', { query: 'lighthouse keepers wick', multimodal: true, top_k: 3 });
      const onPage1 = keepers.results.find((result: any) => result.document_id === id && result.metadata.page === 1);
      t.same(onPage1?.multimodal_elements, [], 'page 1 has no picture');
    });

    await t.test('reprocessing replaces the stored images; deletion removes them', async (t) => {
      const before = (await elements('atlas', pageId)).filter((element: any) => element.type === 'image').map((element: any) => element.id);
      t.equal((await app.inject({ method: 'POST', url: `/v1/collections/atlas/documents/${pageId}/reprocess`, headers: admin })).statusCode, 202);
      await waitForIngestion(app, 'atlas', admin);
      const after = (await elements('atlas', pageId)).filter((element: any) => element.type === 'image');
      t.equal(after.length, 2);
      t.notSame(after.map((element: any) => element.id), before, 'new element records');
      t.equal((await app.inject({ url: after[0].content_url, headers: admin })).statusCode, 200);
      t.equal(elementFiles(ctx, atlas.id, pageId).length, 2, 'still one file per image');
      t.equal((await app.inject({ method: 'DELETE', url: `/v1/collections/atlas/documents/${pageId}`, headers: admin })).statusCode, 204);
      t.same(elementFiles(ctx, atlas.id, pageId), [], 'the images went with the document');
    });

    await t.test('a document that fails keeps no pictures', async (t) => {
      const pictures = await collection({ name: 'pictures-only', multimodal_enabled: true });
      const id = await upload('pictures-only', 'gallery.html', `<html><body><img alt="" src="data:image/png;base64,${PNG.toString('base64')}"></body></html>`, 'text/html');
      const [document] = await waitForIngestion(app, 'pictures-only', admin);
      t.match(document, { id, status: 'failed', error: /holds no text to index/ });
      t.same(elementFiles(ctx, pictures.id, id), [], 'the picture stored before chunking is gone');
      t.same(await elements('pictures-only', id), [], 'no elements');
    });

    await t.test('without multimodal_enabled: image elements are text only; enrichment off: no caption', async (t) => {
      await collection({ name: 'plain' });
      const id = await upload('plain', 'atlas.html', page({ diagrams: PNG }), 'text/html');
      await collection({ name: 'unenriched', multimodal_enabled: true });
      const unenrichedId = await upload('unenriched', 'atlas.html', page({ diagrams: PNG }), 'text/html');
      await waitForIngestion(app, 'plain', admin);
      await waitForIngestion(app, 'unenriched', admin);
      const [image] = (await elements('plain', id)).filter((element: any) => element.type === 'image');
      t.match(image, { text: 'quay layout', content_url: null, caption_status: null });
      assertError(t, await app.inject({ url: `/v1/collections/plain/documents/${id}/elements/${image.id}/content`, headers: admin }), 404, /no stored content/, 'nothing stored');
      const results = await query('plain', { query: 'cranes unload container ships', multimodal: true });
      t.ok(results.results.length > 0);
      t.ok(results.results.every((result: any) => Array.isArray(result.multimodal_elements) && result.multimodal_elements.length === 0), 'empty lists');
      const [stored] = (await elements('unenriched', unenrichedId)).filter((element: any) => element.type === 'image');
      t.match(stored, { content_type: 'image/png', content_url: /\/content$/, caption: null, caption_status: null, caption_error: null });
    });
  });
}

t.test('the captioner without a model that reads images says why', async (t) => {
  const image = { data: PNG, contentType: 'image/png' };
  t.match(await new ImageCaptioner(new PluginRegistry(), undefined).caption(image), { status: 'skipped', caption: null, error: /no vision-capable model configured/ });
  t.match(await new ImageCaptioner(new PluginRegistry(), { plugin: 'gpt-x', model: undefined, apiKey: undefined, baseUrl: undefined }).caption(image), { status: 'skipped', error: /"gpt-x".*not an installed llm plugin/ });
  const textOnly: PluginDefinition<'llm'> = {
    kind: 'llm', name: 'text-only', description: 'reads no images',
    create: () => ({ name: 'text-only', complete: async () => 'never', async *stream() { yield ''; } }),
  };
  const registry = new PluginRegistry();
  registry.register(textOnly as PluginDefinition);
  t.match(await new ImageCaptioner(registry, { plugin: 'text-only', model: undefined, apiKey: undefined, baseUrl: undefined }).caption(image), { status: 'skipped', error: /does not read images/ });
});

t.test('the default instance records that no vision model is configured', async (t) => {
  const ctx = await buildTestApp('pglite');
  t.teardown(() => ctx.close());
  const admin = { cookie: await setupAdmin(ctx.app) };
  await ctx.app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'enriched', multimodal_enabled: true, multimodal_enrichment_enabled: true } });
  const body = multipartUpload([{ filename: 'atlas.html', content: page({ diagrams: PNG }), contentType: 'text/html' }]);
  const id = (await ctx.app.inject({ method: 'POST', url: '/v1/collections/enriched/documents', headers: { ...admin, ...body.headers }, payload: body.payload })).json().id;
  await waitForIngestion(ctx.app, 'enriched', admin);
  const [image] = (await ctx.app.inject({ url: `/v1/collections/enriched/documents/${id}/elements`, headers: admin })).json().data.filter((element: any) => element.type === 'image');
  t.match(image, { caption: null, caption_status: 'skipped', caption_error: /no vision-capable model configured/, content_type: 'image/png' });
});

t.test("a model's caption or error that PostgreSQL cannot store is made storable, and the document still ingests", async (t) => {
  // The caption joins the element text after parsing, past storableParsedDocument: a NUL failed the write.
  const saying = (caption: string, error?: string): PluginDefinition<'llm'> => ({
    kind: 'llm', name: 'odd-vision', description: 'says what it is told',
    create: () => ({
      name: 'odd-vision', vision: true,
      complete: async () => {
        if (error !== undefined) throw new Error(error);
        return caption;
      },
      async *stream() { yield ''; },
    }),
  });
  const image = { data: PNG, contentType: 'image/png' };
  const captioner = (plugin: PluginDefinition<'llm'>) => {
    const registry = new PluginRegistry();
    registry.register(plugin as PluginDefinition);
    return new ImageCaptioner(registry, { plugin: 'odd-vision', model: undefined, apiKey: undefined, baseUrl: undefined });
  };
  t.match(await captioner(saying('a buoy\u0000 and \ud800 a gull')).caption(image), { status: 'captioned', caption: 'a buoy\ufffd and \ufffd a gull' });
  // The error is cut at 500 UTF-16 units: here between the halves of an emoji.
  const failed = await captioner(saying('', `${'x'.repeat(499)}🎉 and more`)).caption(image);
  t.equal(failed.error, `${'x'.repeat(499)}\ufffd`, 'the half emoji left by the cut is replaced');

  const ctx = await buildTestApp('pglite', { captionLlm: { plugin: 'odd-vision', model: undefined, apiKey: undefined, baseUrl: undefined } });
  t.teardown(() => ctx.close());
  ctx.services.plugins.register(saying('a buoy\u0000 at dusk') as PluginDefinition);
  const admin = { cookie: await setupAdmin(ctx.app) };
  await ctx.app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload: { name: 'odd', multimodal_enabled: true, multimodal_enrichment_enabled: true } });
  const body = multipartUpload([{ filename: 'atlas.html', content: page({ diagrams: PNG }), contentType: 'text/html' }]);
  const id = (await ctx.app.inject({ method: 'POST', url: '/v1/collections/odd/documents', headers: { ...admin, ...body.headers }, payload: body.payload })).json().id;
  const [document] = await waitForIngestion(ctx.app, 'odd', admin);
  t.equal(document!.status, 'ready', document!.error ?? '');
  const [stored] = (await ctx.app.inject({ url: `/v1/collections/odd/documents/${id}/elements`, headers: admin })).json().data.filter((element: any) => element.type === 'image');
  t.match(stored, { caption: 'a buoy\ufffd at dusk', caption_status: 'captioned', text: /a buoy\ufffd at dusk/ });
});
