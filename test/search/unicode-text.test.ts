/**
 * Non-English text through the HTTP API, in keyword and semantic mode: accents fold ("café" finds
 * "cafe" and the reverse, "résumé" no longer matches "the sum total"), Cyrillic and CJK queries
 * find their documents (Korean words with their particles attached too), and a query without
 * content words ("the", "🍕") no longer scores 1.0 against every document the analyzer found no
 * English word in.
 */
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

const documents: Record<string, string> = {
  'cafe-fr.txt': 'Le café du coin sert un excellent expresso chaque matin.',
  'resume-en.txt': 'Please attach your résumé and a short cover letter to the application.',
  'sum-en.txt': 'The sum total of the expenses exceeded the annual budget.',
  'strasse-de.txt': 'Die Straße bleibt wegen Bauarbeiten gesperrt, der Verkehr wird umgeleitet.',
  'moscow-ru.txt': 'Москва — столица России и крупнейший город страны.',
  'cat-ru.txt': 'Кошка спит на тёплом подоконнике весь день.',
  'tokyo-ja.txt': '東京都は日本の首都で、人口が最も多い都市です。',
  'beijing-zh.txt': '北京是中华人民共和国的首都，也是政治和文化中心。',
  'bangkok-th.txt': 'กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย',
  'seoul-ko.txt': '서울은 한국의 수도이며 가장 큰 도시입니다.',
  'heat-en.txt': 'Heat transfer in a laminar boundary layer over a heated flat plate.',
  // One Gothic word of 200 letters outside the basic plane (400 UTF-16 units), longer than the
  // longest term stored: cut inside a surrogate pair, it must still be written and find itself.
  'gothic.txt': `Runes ${'\u{10330}\u{10331}'.repeat(100)} end.`,
};

interface Hit {
  document_id: string;
  score: number;
}

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin } = await adminTestApp(t, backend);
    await createTestCollection(app, admin, { name: 'multilingual' });
    for (const [filename, content] of Object.entries(documents)) {
      const upload = multipartUpload([{ filename, content, contentType: 'text/plain' }]);
      const response = await app.inject({ method: 'POST', url: '/v1/collections/multilingual/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload });
      t.equal(response.statusCode, 202, `upload ${filename}`);
    }
    const ingested = await waitForIngestion(app, 'multilingual', admin);
    t.same(ingested.map((document) => document.status), ingested.map(() => 'ready'));
    const filenameOf = new Map(ingested.map((document) => [document.id, document.filename]));

    async function search(query: string, mode: 'keyword' | 'semantic'): Promise<Array<{ filename: string; score: number }>> {
      const response = await app.inject({
        method: 'POST', url: '/v1/collections/multilingual/query', headers: admin,
        payload: { query, search_mode: mode, top_k: 20, skip_cache: true },
      });
      t.equal(response.statusCode, 200, `${mode} query "${query}"`);
      return (response.json().results as Hit[]).map((hit) => ({ filename: filenameOf.get(hit.document_id)!, score: hit.score }));
    }
    const keywordMatches = async (query: string) => (await search(query, 'keyword')).map((hit) => hit.filename);

    await t.test('keyword: accented and unaccented spellings find each other', async (t) => {
      t.same(await keywordMatches('café'), ['cafe-fr.txt']);
      t.same(await keywordMatches('cafe'), ['cafe-fr.txt']);
      t.same(await keywordMatches('CAFÉ'), ['cafe-fr.txt']);
      t.same(await keywordMatches('résumé'), ['resume-en.txt'], 'not "The sum total…"');
      t.same(await keywordMatches('resume'), ['resume-en.txt']);
      t.same(await keywordMatches('Straße'), ['strasse-de.txt']);
      t.same(await keywordMatches('strasse'), ['strasse-de.txt']);
    });

    await t.test('keyword: a word past the longest term is cut whole and still finds itself', async (t) => {
      t.same(await keywordMatches('\u{10330}\u{10331}'.repeat(100)), ['gothic.txt']);
    });

    await t.test('keyword: Cyrillic and CJK queries find their documents', async (t) => {
      t.same(await keywordMatches('Москва'), ['moscow-ru.txt']);
      t.same(await keywordMatches('столица России'), ['moscow-ru.txt']);
      t.same(await keywordMatches('東京'), ['tokyo-ja.txt'], '東京 inside 東京都');
      t.same((await keywordMatches('首都')).sort(), ['beijing-zh.txt', 'tokyo-ja.txt'], '"capital" in Chinese and in Japanese');
      t.same(await keywordMatches('ประเทศไทย'), ['bangkok-th.txt'], '"Thailand" inside a Thai sentence written without spaces');
      t.same(await keywordMatches('서울'), ['seoul-ko.txt'], '"Seoul" in "서울은", its particle attached');
      t.same(await keywordMatches('한국 수도'), ['seoul-ko.txt'], '"Korea" in "한국의", "capital" in "수도이며"');
    });

    await t.test('semantic: a query without content words scores well below 1 everywhere', async (t) => {
      for (const query of ['the', '🍕', '?!']) {
        const hits = await search(query, 'semantic');
        const best = Math.max(...hits.map((hit) => hit.score));
        t.ok(best < 0.5, `"${query}": best score ${best.toFixed(3)} (${hits[0]?.filename})`);
      }
    });

    await t.test('semantic: non-English queries rank their documents first', async (t) => {
      const russian = await search('крупнейшие города России', 'semantic');
      t.equal(russian[0]!.filename, 'moscow-ru.txt');
      t.ok(russian[0]!.score > russian[1]!.score + 0.1, `Moscow ${russian[0]!.score.toFixed(3)}, next ${russian[1]!.filename} ${russian[1]!.score.toFixed(3)}`);
      const japanese = await search('東京', 'semantic');
      t.equal(japanese[0]!.filename, 'tokyo-ja.txt');
      t.ok(japanese[0]!.score < 1, 'no longer the shared empty-text vector');
      const french = await search('un café le matin', 'semantic');
      t.equal(french[0]!.filename, 'cafe-fr.txt');
    });
  });
}
