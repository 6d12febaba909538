/**
 * Through the API: an HTML page is decoded in the encoding its <meta> declares (the HTML standard's
 * prescan of the first 1024 bytes), where it was read as UTF-8 or Latin-1 whatever it said, so a
 * Shift_JIS page was indexed as mojibake. A byte-order mark still wins, a page converted to UTF-8
 * that kept its old declaration stays readable, and raw HTML in Markdown is not affected.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

/** ASCII markup and legacy-encoded text (Buffers, bytes written out because TextEncoder only writes UTF-8) as one file. */
function page(...parts: Array<string | Buffer>): Buffer {
  return Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : part)));
}

const hex = (bytes: string) => Buffer.from(bytes.replaceAll(' ', ''), 'hex');

const PAGES: Record<string, { content: Buffer; contentType?: string; title?: string; text: string }> = {
  'tokyo.html': {
    content: page(
      '<html><head><meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"><title>',
      hex('93 fa 96 7b 8c ea'), // 日本語
      '</title></head><body><p>',
      hex('93 8c 8b 9e 93 73 82 cd 93 fa 96 7b 82 cc 8e f1 93 73 82 c5 82 b7'), // 東京都は日本の首都です
      '</p></body></html>',
    ),
    title: '日本語',
    text: '東京都は日本の首都です',
  },
  'seoul.html': {
    content: page('<!doctype html><meta charset="euc-kr"><h1>', hex('bc ad bf ef'), '</h1><p>', hex('bc ad bf ef c0 ba 20 c7 d1 b1 b9 c0 c7 20 bc f6 b5 b5 c0 d4 b4 cf b4 d9'), '</p>'),
    title: '서울',
    text: '서울은 한국의 수도입니다',
  },
  // Windows-1252's own characters in 0x80-0x9F, which ISO-8859-1 leaves as control codes.
  'prices.html': {
    content: page("<html><head><meta charset='windows-1252'></head><body><p>", hex('93'), 'Fair', hex('94'), ' costs 5 ', hex('80'), '.</p></body></html>'),
    text: '“Fair” costs 5 €.',
  },
  // A <meta> inside a comment declares nothing; the first declaration Node can decode counts.
  'moscow.html': {
    content: page('<!-- <meta charset="iso-8859-2"> --><meta charset="x-unknown"><meta charset="koi8-r"><p>', hex('ed cf d3 cb d7 c1 2c 20 d3 d4 cf cc c9 c3 c1 20 f2 cf d3 d3 c9 c9'), '</p>'),
    text: 'Москва, столица России',
  },
  'mislabelled.html': {
    content: page('<meta charset="iso-8859-1"><p>Café crème, saved as UTF-8</p>'),
    text: 'Café crème, saved as UTF-8',
  },
  'bom.html': {
    content: page(hex('ef bb bf'), '<meta charset="shift_jis"><p>東京 and Zürich</p>'),
    text: '東京 and Zürich',
  },
  'notes.md': {
    content: page('# Notes\n\n<meta charset="shift_jis">\n\nCafé crème and 東京, in UTF-8.\n'),
    contentType: 'text/markdown',
    text: 'Café crème and 東京, in UTF-8.',
  },
};

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'encodings' });
    const ids: Record<string, string> = {};
    for (const [filename, { content, contentType }] of Object.entries(PAGES)) {
      const body = multipartUpload([{ filename, content, contentType: contentType ?? 'text/html' }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/encodings/documents', headers: { ...admin, ...body.headers }, payload: body.payload });
      t.equal(response.statusCode, 202, `${filename} accepted: ${response.body.slice(0, 200)}`);
      ids[filename] = response.json().id;
    }
    await waitForIngestion(app, 'encodings', admin);

    for (const [filename, expected] of Object.entries(PAGES)) {
      t.test(`${filename}: ${expected.text}`, async (t) => {
        const document = (await app.inject({ url: `/v1/collections/encodings/documents/${ids[filename]}`, headers: admin })).json();
        t.match(document, { status: 'ready', error: null });
        if (expected.title) t.equal(document.title, expected.title, 'title');
        const elements = (await app.inject({ url: `/v1/collections/encodings/documents/${ids[filename]}/elements`, headers: admin })).json().data as Array<{ text: string }>;
        t.ok(elements.some((element) => element.text === expected.text), `an element reads "${expected.text}": ${JSON.stringify(elements.map((element) => element.text))}`);
        const chunks = (await app.inject({ url: `/v1/collections/encodings/documents/${ids[filename]}/chunks`, headers: admin })).json().data as Array<{ text: string }>;
        t.ok(chunks.some((chunk) => chunk.text.includes(expected.text)), 'and is indexed');
      });
    }
  });
}
