import t from 'tap';
import { builtInParsers } from '../../plugins/parser/index.js';
import { htmlParserPlugin } from '../../plugins/parser/html/index.js';
import { markdownParserPlugin } from '../../plugins/parser/markdown/index.js';
import { textParserPlugin } from '../../plugins/parser/text/index.js';
import type { DocumentElement, ParsedDocument, PluginDefinition } from '../../src/plugins.js';

async function parse(plugin: PluginDefinition<'parser'>, filename: string, content: string | Buffer): Promise<ParsedDocument> {
  const parser = plugin.create({}, {});
  const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return parser.parse({ filename, contentType: parser.contentTypes[0], data });
}

/** [type, text, headingPath] of each element, plus level for headings. */
const outline = (elements: DocumentElement[]): unknown[] =>
  elements.map((element) =>
    element.type === 'heading'
      ? [element.type, element.text, element.headingPath, element.level]
      : [element.type, element.text, element.headingPath],
  );

t.test('builtInParsers lists every format', async (t) => {
  const names = ['text', 'markdown', 'html', 'pdf', 'docx', 'odt', 'pptx', 'odp', 'xlsx', 'ods', 'csv', 'json', 'email'];
  t.same(builtInParsers.map((plugin) => [plugin.kind, plugin.name]), names.map((name) => ['parser', name]));
  const parsers = builtInParsers.map((plugin) => plugin.create({}, {}));
  t.same(parsers.map((parser) => parser.name), names);
  t.same(parsers[0].extensions, ['txt', 'text', 'log']);
  t.ok(parsers[1].contentTypes.includes('text/markdown') && parsers[1].extensions.includes('md'));
  t.ok(parsers[2].contentTypes.includes('text/html') && parsers[2].extensions.includes('htm'));
});

t.test('text: paragraphs on blank lines, BOM stripped, Latin-1 fallback, stray bytes in UTF-8', async (t) => {
  const document = await parse(textParserPlugin, 'notes.txt', '\uFEFFFirst line\r\nstill first.\r\n\r\n  \t \n\nSecond paragraph.\n\n\n');
  t.same(outline(document.elements), [
    ['paragraph', 'First line\nstill first.', []],
    ['paragraph', 'Second paragraph.', []],
  ]);
  t.equal(document.title, undefined);

  // "café crème" in Latin-1: 0xE9 and 0xE8 alone are invalid UTF-8.
  const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x63, 0x72, 0xe8, 0x6d, 0x65]);
  t.same(outline((await parse(textParserPlugin, 'menu.txt', latin1)).elements), [['paragraph', 'café crème', []]]);
  // UTF-8 but for two stray Windows-1252 bytes (é, and 0x80, the euro sign): the two-byte sequences
  // led by 0xC2 ("£", "°"), the three- and four-byte ones ("—", "京", "🙂") and the rest stay UTF-8, each stray byte is read alone.
  const stray = Buffer.concat([Buffer.from('Caf'), Buffer.from([0xe9]), Buffer.from(' prices — £5 at 20°C in 東京, naïve '), Buffer.from([0x80]), Buffer.from('3 🙂')]);
  t.same(outline((await parse(textParserPlugin, 'prices.txt', stray)).elements), [['paragraph', 'Café prices — £5 at 20°C in 東京, naïve €3 🙂', []]]);
  // Valid UTF-8 is never reinterpreted.
  t.same(outline((await parse(textParserPlugin, 'menu.txt', 'café crème')).elements), [['paragraph', 'café crème', []]]);
  // Windows "Unicode" (UTF-16 LE with BOM).
  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('naïve\r\n\r\ntext', 'utf16le')]);
  t.same(outline((await parse(textParserPlugin, 'win.txt', utf16)).elements), [['paragraph', 'naïve', []], ['paragraph', 'text', []]]);
  t.same((await parse(textParserPlugin, 'empty.txt', '')).elements, []);
});

const markdown = `---
title: "Front matter title"
draft: false
weight: 3
tags: [a, b]
nested:
  key: 1
---
# Guide &amp; Notes

Intro *text* with \`f()\` and a [link](https://example.com),
wrapped onto a second line.

## Install

- one
- two
  - nested

3. three
4. four

| name | value |
|------|-------|
| a    | 1     |

\`\`\`js
let x = 1;

x += 1;
\`\`\`

> quoted
> text
>
> a second quoted paragraph
>
> ---

### Deep

deep text

# Second

after
`;

t.test('markdown: element types, heading paths, title and front matter', async (t) => {
  const document = await parse(markdownParserPlugin, 'guide.md', markdown);
  t.same(outline(document.elements), [
    ['heading', 'Guide & Notes', [], 1],
    ['paragraph', 'Intro text with f() and a link, wrapped onto a second line.', ['Guide & Notes']],
    ['heading', 'Install', ['Guide & Notes'], 2],
    ['list', '- one\n- two\n  - nested', ['Guide & Notes', 'Install']],
    ['list', '3. three\n4. four', ['Guide & Notes', 'Install']],
    ['table', 'name | value\na | 1', ['Guide & Notes', 'Install']],
    ['code', 'let x = 1;\n\nx += 1;', ['Guide & Notes', 'Install']],
    // A quote's paragraphs are its lines; its blank lines and rule add none.
    ['paragraph', 'quoted text\na second quoted paragraph', ['Guide & Notes', 'Install']],
    ['heading', 'Deep', ['Guide & Notes', 'Install'], 3],
    ['paragraph', 'deep text', ['Guide & Notes', 'Install', 'Deep']],
    ['heading', 'Second', [], 1],
    ['paragraph', 'after', ['Second']],
  ]);
  t.same(document.elements[6].metadata, { language: 'js' });
  t.equal(document.title, 'Front matter title', 'the front matter title wins over the first h1');
  // Read as YAML: the flow list and the nested map are kept as they were written.
  t.same(document.metadata, { title: 'Front matter title', draft: false, weight: 3, tags: ['a', 'b'], nested: { key: 1 } });
});

t.test('markdown: edge cases', async (t) => {
  const withoutH1 = await parse(markdownParserPlugin, 'post.md', '---\ntitle: Only in front matter\n---\nBody.\n');
  t.equal(withoutH1.title, 'Only in front matter');
  t.same(outline(withoutH1.elements), [['paragraph', 'Body.', []]]);

  // "---", a line, "---" is a thematic break and a setext heading in Markdown unless it is a YAML mapping.
  const notYaml = await parse(markdownParserPlugin, 'rules.md', '---\nHouse rules\n---\nNo running on the quay.\n');
  t.same(outline(notYaml.elements), [['heading', 'House rules', [], 2], ['paragraph', 'No running on the quay.', ['House rules']]]);
  t.equal(notYaml.metadata, undefined);
  const unparsable = await parse(markdownParserPlugin, 'broken.md', '---\ntitle: [unclosed\n---\nText.\n');
  t.same(outline(unparsable.elements), [['paragraph', 'Text.', []]], 'front matter that is not valid YAML is dropped, not indexed');
  t.equal(unparsable.metadata, undefined, 'and gives no metadata');

  const plain = await parse(markdownParserPlugin, 'plain.md', '## Level two first\n\ntext\n\n- [x] done\n- [ ] todo\n\n<div>raw <b>html</b></div>\n\n---\n');
  t.same(outline(plain.elements), [
    ['heading', 'Level two first', [], 2],
    ['paragraph', 'text', ['Level two first']],
    ['list', '- [x] done\n- [ ] todo', ['Level two first']],
    ['paragraph', 'raw html', ['Level two first']],
  ]);
  t.equal(plain.title, undefined);
  t.equal(plain.metadata, undefined);

  const mdx = await parse(markdownParserPlugin, 'page.mdx', "import Chart from './chart'\n\n# Page\n\nProse.\n");
  t.same(outline(mdx.elements), [
    ['heading', 'Page', [], 1],
    ['paragraph', 'Prose.', ['Page']],
  ]);
});

t.test('markdown: list items keep their blocks on lines of their own', async (t) => {
  const document = await parse(markdownParserPlugin, 'steps.md', [
    '1. Install:',
    '',
    '        npm i widget',
    '',
    '2. Configure',
    '   - nested first',
    '',
    '   Then run it:',
    '   ~~~sh',
    '   widget --fast',
    '   ~~~',
    '3. Done',
    '',
    '- sizes',
    '  <table><tr><td>S</td><td>1</td></tr></table>',
    '',
  ].join('\n'));
  t.same(outline(document.elements), [
    ['list', '1. Install:\n       npm i widget\n2. Configure\n  - nested first\n  Then run it:\n  ~~~sh\n  widget --fast\n  ~~~\n3. Done', []],
    ['list', '- sizes\n  S | 1', []],
  ], 'indented and fenced code as written, a paragraph after a nested list after it, HTML as the html parser reads it');
});

t.test('markdown: HTML blocks, logo and badge headings, title from the first heading', async (t) => {
  const readme = await parse(markdownParserPlugin, 'README.md', [
    '<div align="center">',
    '<h1>cross-env</h1>',
    '<p>Run scripts <b>anywhere</b></p>',
    '</div>',
    '',
    '<script>track()</script>',
    '',
    '<details><summary>More</summary>',
    '',
    '## ![Tom &amp; Jerry](logo.png)',
    '',
    '<h3><img src="a.svg" alt="a &lt; b &amp; c"></h3>',
    '',
    '### Usage [![ci](https://ci.example/badge.svg)](https://ci.example) ![size](size.svg)',
    '',
  ].join('\n'));
  t.same(outline(readme.elements), [
    ['heading', 'cross-env', [], 1],
    ['paragraph', 'Run scripts anywhere', ['cross-env']],
    ['paragraph', 'More', ['cross-env']],
    ['heading', 'Tom & Jerry', ['cross-env'], 2],
    ['heading', 'a < b & c', ['cross-env', 'Tom & Jerry'], 3],
    ['heading', 'Usage', ['cross-env', 'Tom & Jerry'], 3],
  ], 'a heading inside a wrapper is a heading; a script is not text; a picture names only a heading without words');
  t.equal(readme.title, 'cross-env', 'the h1 inside the wrapper names the document');

  const changelog = await parse(markdownParserPlugin, 'CHANGELOG.md', '## 2.0.0\n\n- breaking\n\n# 1.0.0\n\n- first\n');
  t.equal(changelog.title, undefined, 'an h1 after other headings is a section, not the title');
});

const html = `<!doctype html>
<html><head><title> My   Page </title><style>p { color: red }</style>
<script>document.write("<p>not content</p>")</script></head>
<body>
<header><nav><a href="/">Home</a> <a href="/docs">Docs</a></nav></header>
<main><article>
<header><h1>Guide &amp; Notes</h1></header>
<p>Intro   text with <code>f()</code> and<br>a line break.</p>
<div>Loose div text <p>inner paragraph</p> tail</div>
<h2>Install</h2>
<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>
<ol start="3"><li><p>three</p></li><li>four</li></ol>
<table><caption>Sizes</caption>
<thead><tr><th>name</th><th>value</th></tr></thead>
<tbody><tr><td>a</td><td>1</td></tr><tr><td>b &lt; c</td><td>2</td></tr></tbody></table>
<pre><code class="language-js">
let x = 1;
  if (x) {   y(); }
</code></pre>
<aside><header>ad</header><p>advertisement</p></aside>
<h3>Deep <em>dive</em></h3><p>deep &lt;text&gt;&nbsp;here</p>
<h2>Other</h2><p>other text</p>
</article></main>
<footer>copyright</footer>
<form><label>Email</label><input name="email"></form>
<noscript>enable js</noscript>
</body></html>`;

t.test('html: element types, heading paths, inline markup in headings, skipped chrome, entities, whitespace', async (t) => {
  const document = await parse(htmlParserPlugin, 'page.html', html);
  t.same(outline(document.elements), [
    ['heading', 'Guide & Notes', [], 1],
    ['paragraph', 'Intro text with f() and\na line break.', ['Guide & Notes']],
    ['paragraph', 'Loose div text', ['Guide & Notes']],
    ['paragraph', 'inner paragraph', ['Guide & Notes']],
    ['paragraph', 'tail', ['Guide & Notes']],
    ['heading', 'Install', ['Guide & Notes'], 2],
    ['list', '- one\n- two\n  - nested', ['Guide & Notes', 'Install']],
    ['list', '3. three\n4. four', ['Guide & Notes', 'Install']],
    ['paragraph', 'Sizes', ['Guide & Notes', 'Install']],
    ['table', 'name | value\na | 1\nb < c | 2', ['Guide & Notes', 'Install']],
    ['code', 'let x = 1;\n  if (x) {   y(); }', ['Guide & Notes', 'Install']],
    ['heading', 'Deep dive', ['Guide & Notes', 'Install'], 3],
    ['paragraph', 'deep <text> here', ['Guide & Notes', 'Install', 'Deep dive']],
    ['heading', 'Other', ['Guide & Notes'], 2],
    ['paragraph', 'other text', ['Guide & Notes', 'Other']],
  ]);
  t.same(document.elements[10].metadata, { language: 'js' });
  t.equal(document.title, 'My Page');
});

t.test('html: title falls back to the first h1; unclosed tags still produce elements; an empty heading is none', async (t) => {
  const document = await parse(htmlParserPlugin, 'x.htm', '<h1>Only heading</h1><h2 id="anchor"> </h2><p>first<p>second<ul><li>a<li>b</ul>');
  t.equal(document.title, 'Only heading');
  t.same(outline(document.elements), [
    ['heading', 'Only heading', [], 1],
    ['paragraph', 'first', ['Only heading']],
    ['paragraph', 'second', ['Only heading']],
    ['list', '- a\n- b', ['Only heading']],
  ]);
  t.same((await parse(htmlParserPlugin, 'empty.html', '<html><body><script>x()</script></body></html>')).elements, []);
});

t.test('html: cookie banners, chrome landmarks (their role in any case and spacing) and hidden elements (attribute, aria, inline style) are dropped; recipe cookies are not', async (t) => {
  const page = `<html><body>
<div id="onetrust-banner-sdk"><p>We use cookies to improve your experience.</p><button>Accept all</button></div>
<div class="cookie-consent-wrapper"><p>Manage cookie preferences</p></div>
<section class="gdpr-notice">Your privacy matters</section>
<div role="navigation"><a href="/">Home</a></div>
<div role=" ContentInfo ">Site footer text</div>
<p hidden>hidden text</p><div aria-hidden="true">decorative</div>
<iframe src="https://ads.example.com">fallback</iframe>
<main><h1>Oatmeal cookies</h1>
<div class="cookie-recipe"><p>Mix oats and butter.</p></div>
<dialog>Subscribe to our newsletter</dialog>
<p>Bake for twelve minutes.</p>
<p style="display: none">styled away</p><div style="color: red; visibility : hidden !important">invisible</div>
<p style="display:block; color: brown">Cool on a rack.</p></main>
<div class="cc-window">Cookie bar</div>
</body></html>`;
  const document = await parse(htmlParserPlugin, 'recipe.html', page);
  t.same(outline(document.elements), [
    ['heading', 'Oatmeal cookies', [], 1],
    ['paragraph', 'Mix oats and butter.', ['Oatmeal cookies']],
    ['paragraph', 'Bake for twelve minutes.', ['Oatmeal cookies']],
    ['paragraph', 'Cool on a rack.', ['Oatmeal cookies']],
  ]);
});

t.test('html: data: URI pictures become image elements with their bytes; remote ones are not fetched, their alt text stays in the text', async (t) => {
  const pixels = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
  const page = `<h1>Map</h1><p>Before <img src="https://example.com/remote.png" alt="remote"> the map
<img alt=" Harbour   map " src="data:image/png;base64,${pixels.toString('base64')}"> after it.</p>
<table><tr><td>cell <img src="data:image/gif;base64,R0lGODlh" alt="icon"></td></tr></table>
<img src="data:image/png;base64," alt="empty">`;
  const document = await parse(htmlParserPlugin, 'map.html', page);
  t.same(document.elements.map((element) => [element.type, element.text, element.headingPath, element.image?.contentType]), [
    ['heading', 'Map', [], undefined],
    ['paragraph', 'Before remote the map', ['Map'], undefined],
    ['image', 'Harbour map', ['Map'], 'image/png'],
    ['paragraph', 'after it.', ['Map'], undefined],
    ['table', 'cell', ['Map'], undefined],
    ['image', 'icon', ['Map'], 'image/gif'],
    ['paragraph', 'empty', ['Map'], undefined],
  ], 'an image inside a table follows the table; a picture that cannot be read leaves its alt text, as a browser shows it');
  t.same(document.elements[2]!.image!.data, pixels);
});
