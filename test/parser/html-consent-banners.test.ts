/**
 * Through the API: a cookie or consent banner is recognised by a class or id naming both its
 * subject and a banner's shape, or a consent product, so pages whose content is about cookies,
 * consent or the GDPR are indexed: `<main id="cookie-policy">` failed as "the file holds no text
 * to index", and a recipe in `<article id="cookies">` lost its text.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

interface Element { type: string; text: string }

const TOPIC_PAGES: Record<string, { html: string; text: string }> = {
  'cookie-policy.html': {
    html: '<html><head><title>Cookie Policy</title></head><body><main id="cookie-policy"><h1>Cookie Policy</h1><p>This site stores small text files called cookies in your browser.</p></main></body></html>',
    text: 'This site stores small text files called cookies in your browser.',
  },
  'policy-article.html': {
    html: '<html><body><nav>Home | Legal</nav><article class="cookie-policy"><h1>How we use cookies</h1><p>Session cookies keep you signed in.</p></article></body></html>',
    text: 'Session cookies keep you signed in.',
  },
  'recipe.html': {
    html: '<html><body><article id="cookies"><h1>Chocolate chip cookies</h1><p>Cream the butter with brown sugar, then fold in the chips.</p></article></body></html>',
    text: 'Cream the butter with brown sugar, then fold in the chips.',
  },
  'medicine.html': {
    html: '<html><body><div class="consent"><h1>Informed consent in medicine</h1><p>Patients agree to a treatment after hearing its risks.</p></div></body></html>',
    text: 'Patients agree to a treatment after hearing its risks.',
  },
  'gdpr.html': {
    html: '<html><body><div id="gdpr"><h1>GDPR overview</h1><p>The regulation gives people the right to see their data.</p></div></body></html>',
    text: 'The regulation gives people the right to see their data.',
  },
  // Banner-shaped names, but nothing else on the page: the guess is wrong, and the page is not failed as empty.
  'only-notice.html': {
    html: '<html><body><div class="cookie-notice"><h1>Cookie notice</h1><p>We explain here which cookies the shop sets.</p></div></body></html>',
    text: 'We explain here which cookies the shop sets.',
  },
};

const BANNERED_PAGE = `<html><head><title>Bakery</title></head><body>
<div id="cookie-banner" class="cookie-consent"><p>We use cookies. <button>Accept</button></p></div>
<div id="onetrust-banner-sdk"><p>OneTrust asks for consent.</p></div>
<div id="CybotCookiebotDialog"><p>Cookiebot asks for consent.</p></div>
<div class="cc-window">Osano cookie bar</div>
<div class="cookieBanner">Camel-case banner</div>
<section class="gdpr-notice">Your privacy matters</section>
<article><h1>Bakery</h1><p>Fresh bread every morning.</p>
<section class="cookie-boxes"><h2>Gift boxes</h2><p>Twelve cookies in a tin.</p></section>
<div class="trustees"><p>The trustees meet every spring.</p></div></article>
</body></html>`;

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'pages' });
    const upload = async (filename: string, content: string) => {
      const body = multipartUpload([{ filename, content, contentType: 'text/html' }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/pages/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, `${filename} accepted: ${response.body.slice(0, 200)}`);
      return response.json().id as string;
    };
    const ids: Record<string, string> = {};
    for (const [filename, page] of Object.entries(TOPIC_PAGES)) ids[filename] = await upload(filename, page.html);
    const bannered = await upload('bakery.html', BANNERED_PAGE);
    await waitForIngestion(app, 'pages', admin);
    const document = async (id: string) => (await app.inject({ url: `/v1/collections/pages/documents/${id}`, headers: admin })).json();
    const chunkText = async (id: string) => ((await app.inject({ url: `/v1/collections/pages/documents/${id}/chunks`, headers: admin })).json().data as Array<{ text: string }>)
      .map((chunk) => chunk.text).join('\n');

    t.test('a page about cookies, consent or the GDPR is indexed, also when its only block has a banner-shaped name', async (t) => {
      for (const [filename, page] of Object.entries(TOPIC_PAGES)) {
        t.match(await document(ids[filename]!), { status: 'ready', error: null }, `${filename} is ready`);
        t.match(await chunkText(ids[filename]!), page.text, `${filename} is indexed`);
      }
      t.equal((await document(ids['cookie-policy.html']!)).title, 'Cookie Policy');
    });

    t.test('banners beside the content are still dropped; gift boxes and trustees are content', async (t) => {
      const elements = (await app.inject({ url: `/v1/collections/pages/documents/${bannered}/elements`, headers: admin })).json().data as Element[];
      t.same(elements.map((element) => [element.type, element.text]), [
        ['heading', 'Bakery'],
        ['paragraph', 'Fresh bread every morning.'],
        ['heading', 'Gift boxes'],
        ['paragraph', 'Twelve cookies in a tin.'],
        ['paragraph', 'The trustees meet every spring.'],
      ]);
      t.notMatch(await chunkText(bannered), /We use cookies|OneTrust|Cookiebot|Osano|Camel-case|privacy/, 'no banner text is indexed');
    });
  });
}
