import t from 'tap';
import { chunkElements, joinElementTexts, type ElementChunk } from '../../src/chunking/chunk-elements.js';
import type { DocumentElement } from '../../src/plugins.js';

const paragraph = (text: string, headingPath: string[] = [], page?: number): DocumentElement => ({
  type: 'paragraph',
  text,
  headingPath,
  ...(page !== undefined ? { page } : {}),
});
const heading = (text: string, level: number, headingPath: string[]): DocumentElement => ({ type: 'heading', text, level, headingPath });

/** [text, startElement, endElement, charStart] of each chunk, for compact exact assertions. */
const outline = (chunks: ElementChunk[]): Array<[string, number, number, number | undefined]> =>
  chunks.map((chunk) => [chunk.text, chunk.startElement, chunk.endElement, chunk.charStart]);

const guide: DocumentElement[] = [
  heading('Guide', 1, []),
  heading('Install', 2, ['Guide']),
  paragraph('Run the installer. It takes a minute.', ['Guide', 'Install']),
  paragraph('Then restart the machine and log in again.', ['Guide', 'Install']),
  heading('Options', 3, ['Guide', 'Install']),
  { type: 'table', text: 'name | default\nsize | 10\ncolor | red', headingPath: ['Guide', 'Install', 'Options'] },
  heading('Usage', 2, ['Guide']),
  paragraph(
    'One two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.',
    ['Guide', 'Usage'],
  ),
  paragraph('Short tail.', ['Guide', 'Usage']),
];

t.test('paragraph strategy packs whole elements and respects top-level headings', async (t) => {
  const chunks = chunkElements(guide, { chunkSize: 100, chunkOverlap: 30, strategy: 'paragraph' });
  t.same(outline(chunks), [
    ['Guide\n\nInstall\n\nRun the installer. It takes a minute.\n\nThen restart the machine and log in again.', 0, 3, 0],
    // No whole paragraph fits in the 30-character overlap, so the chunk opens with the last one's tail.
    ['the machine and log in again.\n\nOptions\n\nname | default\nsize | 10\ncolor | red', 3, 5, 68],
    // "## Usage" opens a new section: no overlap from "Options" and the heading leads its content.
    ['Usage\n\nOne two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen', 6, 7, 146],
    // The 131-character paragraph alone exceeds 100, so it falls back to recursive splitting.
    ['thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.', 7, 7, 216],
    // The element after it still packs afresh, opening with the tail of its last chunk.
    ['eighteen nineteen twenty.\n\nShort tail.', 7, 8, 260],
  ]);
  // A chunk is about the section holding most of its text: "Guide" opens the first, whose text is Install's.
  t.same(
    chunks.map((chunk) => chunk.headingPath),
    [['Guide', 'Install'], ['Guide', 'Install', 'Options'], ['Guide', 'Usage'], ['Guide', 'Usage'], ['Guide', 'Usage']],
  );
  t.same(
    chunks.map((chunk) => chunk.index),
    [0, 1, 2, 3, 4],
  );
});

t.test('recursive strategy overlaps by characters but keeps the table whole', async (t) => {
  const chunks = chunkElements(guide, { chunkSize: 100, chunkOverlap: 30, strategy: 'recursive' });
  t.same(outline(chunks), [
    ['Guide\n\nInstall\n\nRun the installer. It takes a minute.\n\nThen restart the machine and log in again.', 0, 3, 0],
    ['the machine and log in again.\n\nOptions\n\nname | default\nsize | 10\ncolor | red', 3, 5, 68],
    ['Usage\n\nOne two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen', 6, 7, 146],
    ['thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.\n\nShort tail.', 7, 8, 216],
  ]);
  // It opens with Install's last words (the overlap) but is mostly the Options table.
  t.same(chunks.map((chunk) => chunk.headingPath), [['Guide', 'Install'], ['Guide', 'Install', 'Options'], ['Guide', 'Usage'], ['Guide', 'Usage']]);
});

t.test('recursive overlap: at most chunkOverlap characters, starting at a word', async (t) => {
  const words = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon';
  const expected = [
    ['alpha beta gamma delta epsilon zeta eta', 0, 0, 0],
    ['zeta eta theta iota kappa lambda mu nu', 0, 0, 31],
    ['lambda mu nu xi omicron pi rho sigma tau', 0, 0, 57],
    ['rho sigma tau upsilon', 0, 0, 84],
  ];
  t.same(outline(chunkElements([paragraph(words)], { chunkSize: 40, chunkOverlap: 15, strategy: 'recursive' })), expected);
  // One oversized paragraph: the paragraph strategy falls back to the same recursive split.
  t.same(outline(chunkElements([paragraph(words)], { chunkSize: 40, chunkOverlap: 15, strategy: 'paragraph' })), expected);
  t.same(
    outline(chunkElements([paragraph(words)], { chunkSize: 40, chunkOverlap: 0, strategy: 'recursive' })).map(([text]) => text),
    ['alpha beta gamma delta epsilon zeta eta', 'theta iota kappa lambda mu nu xi omicron', 'pi rho sigma tau upsilon'],
  );
});

t.test('recursive splitting prefers sentence ends over spaces', async (t) => {
  const sentences = 'The wing flutters at Mach 2. Heating thins the boundary layer. Transition moves forward. Drag rises sharply.';
  t.same(outline(chunkElements([paragraph(sentences)], { chunkSize: 60, chunkOverlap: 0, strategy: 'recursive' })), [
    ['The wing flutters at Mach 2.', 0, 0, 0],
    ['Heating thins the boundary layer. Transition moves forward.', 0, 0, 29],
    ['Drag rises sharply.', 0, 0, 89],
  ]);
});

t.test('paragraph overlap repeats trailing whole elements; pages follow the first element', async (t) => {
  const five = [1, 2, 3, 4, 5].map((n) => paragraph(`Paragraph number ${n}.`, [], n));
  const chunks = chunkElements(five, { chunkSize: 50, chunkOverlap: 25, strategy: 'paragraph' });
  t.same(outline(chunks), [
    ['Paragraph number 1.\n\nParagraph number 2.', 0, 1, 0],
    ['Paragraph number 2.\n\nParagraph number 3.', 1, 2, 21],
    ['Paragraph number 3.\n\nParagraph number 4.', 2, 3, 42],
    ['Paragraph number 4.\n\nParagraph number 5.', 3, 4, 63],
  ]);
  t.same(
    chunks.map((chunk) => chunk.page),
    [1, 2, 3, 4],
  );
  // Overlap 0: no element repeats.
  t.same(
    outline(chunkElements(five, { chunkSize: 50, chunkOverlap: 0, strategy: 'paragraph' })).map(([, start, end]) => [start, end]),
    [[0, 1], [2, 3], [4, 4]],
  );
  // The recursive strategy starts its character overlap at the sentence, not at "1.".
  t.equal(chunkElements(five, { chunkSize: 50, chunkOverlap: 25, strategy: 'recursive' })[1].text, 'Paragraph number 2.\n\nParagraph number 3.');
});

t.test('a heading never ends a chunk when it can open the next one', async (t) => {
  const elements = [
    paragraph('A first paragraph that is exactly fifty chars long', ['Doc']),
    heading('Details', 3, ['Doc']),
    paragraph('The details paragraph has forty-five chars..', ['Doc', 'Details']),
  ];
  for (const strategy of ['paragraph', 'recursive'] as const) {
    const chunks = chunkElements(elements, { chunkSize: 70, chunkOverlap: 10, strategy });
    t.same(outline(chunks), [
      ['A first paragraph that is exactly fifty chars long', 0, 0, 0],
      ['Details\n\nThe details paragraph has forty-five chars..', 1, 2, 52],
    ], strategy);
    t.same(chunks[1].headingPath, ['Doc', 'Details'], strategy);
  }
});

t.test('tables and code blocks stay whole when they fit; oversized ones split on lines', async (t) => {
  const table = 'col a | col b\n1 | one\n2 | two\n3 | three\n4 | four';
  const elements: DocumentElement[] = [
    paragraph('Intro words that come before the table here.'),
    { type: 'table', text: table, headingPath: [] },
    { type: 'code', text: 'function f() {\n\n  return 1;\n}', headingPath: [] },
  ];
  for (const strategy of ['paragraph', 'recursive'] as const) {
    const chunks = chunkElements(elements, { chunkSize: 60, chunkOverlap: 10, strategy });
    t.ok(chunks.some((chunk) => chunk.text.endsWith(table)), `${strategy}: table whole`);
    // The blank line inside the code block is not a split point while the block fits.
    t.ok(chunks.some((chunk) => chunk.text.endsWith('function f() {\n\n  return 1;\n}')), `${strategy}: code whole`);
  }
  const rows = chunkElements([{ type: 'table', text: table, headingPath: [] }], { chunkSize: 25, chunkOverlap: 0, strategy: 'paragraph' });
  t.same(rows.map((chunk) => chunk.text), ['col a | col b\n1 | one', '2 | two\n3 | three', '4 | four']);
});

t.test('edge cases and validation', async (t) => {
  t.same(chunkElements([], { chunkSize: 100, chunkOverlap: 10, strategy: 'paragraph' }), []);
  t.same(chunkElements([paragraph('   '), { type: 'page_break', text: '', headingPath: [] }], { chunkSize: 100, chunkOverlap: 10, strategy: 'recursive' }), []);
  // Blank elements are skipped but keep their place in element indices and offsets.
  t.same(outline(chunkElements([paragraph(''), paragraph('  Hello world  ')], { chunkSize: 100, chunkOverlap: 10, strategy: 'paragraph' })), [
    ['Hello world', 1, 1, 4],
  ]);
  // A word longer than chunkSize is cut into chunkSize pieces.
  t.same(
    chunkElements([paragraph('abcdefghij')], { chunkSize: 4, chunkOverlap: 0, strategy: 'recursive' }).map((chunk) => chunk.text),
    ['abcd', 'efgh', 'ij'],
  );
  // ...but never between the halves of a surrogate pair: "abc😀" cuts before the emoji.
  t.same(
    chunkElements([paragraph('abc\u{1F600}def')], { chunkSize: 4, chunkOverlap: 0, strategy: 'recursive' }).map((chunk) => chunk.text),
    ['abc', '\u{1F600}de', 'f'],
  );
  const valid = { chunkSize: 100, chunkOverlap: 10, strategy: 'paragraph' } as const;
  t.throws(() => chunkElements([], { ...valid, chunkOverlap: 100 }), RangeError);
  t.throws(() => chunkElements([], { ...valid, chunkOverlap: 150 }), RangeError);
  t.throws(() => chunkElements([], { ...valid, chunkOverlap: -1 }), RangeError);
  t.throws(() => chunkElements([], { ...valid, chunkSize: 0, chunkOverlap: 0 }), RangeError);
  t.throws(() => chunkElements([], { ...valid, chunkSize: 10.5 }), RangeError);
  t.throws(() => chunkElements([], { ...valid, strategy: 'sentence' as 'paragraph' }), RangeError);
});

/** A deterministic document mixing headings, short and oversized paragraphs, lists and tables. */
function syntheticDocument(): DocumentElement[] {
  const vocabulary = 'flow wing shock layer heat plate mach drag lift nozzle jet wake vortex panel'.split(' ');
  let seed = 7;
  const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const sentence = (): string => {
    const length = 4 + Math.floor(next() * 12);
    const words = Array.from({ length }, () => vocabulary[Math.floor(next() * vocabulary.length)]);
    return words.join(' ').replace(/^./, (first) => first.toUpperCase()) + '.';
  };
  const elements: DocumentElement[] = [];
  let path: string[] = [];
  for (let index = 0; index < 60; index++) {
    const roll = next();
    if (roll < 0.12) {
      const level = 1 + Math.floor(next() * 3);
      const text = `Section ${index}`;
      path = path.slice(0, level - 1);
      elements.push(heading(text, level, [...path]));
      path.push(text);
    } else if (roll < 0.2) {
      elements.push({ type: 'list', text: Array.from({ length: 4 }, () => `- ${sentence()}`).join('\n'), headingPath: [...path] });
    } else if (roll < 0.25) {
      elements.push({ type: 'table', text: 'a | b\n1 | 2\n3 | 4', headingPath: [...path] });
    } else {
      const sentences = 1 + Math.floor(next() * (next() < 0.2 ? 30 : 5));
      elements.push(paragraph(Array.from({ length: sentences }, sentence).join(' '), [...path], 1 + Math.floor(index / 10)));
    }
  }
  return elements;
}

t.test('invariants on a mixed document: exact slices, size limit, nothing lost', async (t) => {
  const elements = syntheticDocument();
  const documentText = joinElementTexts(elements);
  for (const strategy of ['paragraph', 'recursive'] as const) {
    for (const [chunkSize, chunkOverlap] of [[200, 0], [300, 50], [800, 120], [120, 119]]) {
      const label = `${strategy} ${chunkSize}/${chunkOverlap}`;
      const chunks = chunkElements(elements, { chunkSize, chunkOverlap, strategy });
      const covered = new Uint8Array(documentText.length);
      let previousStart = -1;
      let failures = 0;
      for (const chunk of chunks) {
        const start = chunk.charStart as number;
        if (documentText.slice(start, start + chunk.text.length) !== chunk.text) failures++;
        if (chunk.text.length > chunkSize || chunk.text.trim() !== chunk.text || chunk.text.length === 0) failures++;
        if (start <= previousStart || chunk.startElement > chunk.endElement) failures++;
        previousStart = start;
        covered.fill(1, start, start + chunk.text.length);
      }
      const lost = [...documentText].filter((character, position) => /\S/.test(character) && !covered[position]).length;
      t.equal(failures, 0, `${label}: every chunk is an in-order, trimmed slice within chunkSize`);
      t.equal(lost, 0, `${label}: every non-blank character is in some chunk`);
    }
  }
});

t.test('chunks that continue a table past its start name its header row', async (t) => {
  const rows = ['name | default', ...Array.from({ length: 8 }, (_, index) => `option${index} | value${index}`)];
  const elements: DocumentElement[] = [
    paragraph('Settings below.'),
    { type: 'table', text: rows.join('\n'), headingPath: [], tableHeader: rows[0] },
    { type: 'table', text: rows.join('\n').replace('name | default', 'key | setting'), headingPath: [] },
  ];
  for (const strategy of ['recursive', 'paragraph'] as const) {
    const chunks = chunkElements(elements, { chunkSize: 60, chunkOverlap: 10, strategy });
    const ofFirstTable = chunks.filter((chunk) => chunk.startElement === 1);
    t.ok(ofFirstTable.length >= 2, `${strategy}: the table spans several chunks`);
    t.notOk(ofFirstTable[0]!.text.startsWith('name') && ofFirstTable[0]!.tableHeader !== undefined, `${strategy}: the chunk holding the header names none`);
    const continuing = chunks.filter((chunk) => chunk.tableHeader !== undefined);
    t.ok(continuing.length >= 1);
    for (const chunk of continuing) {
      t.equal(chunk.startElement, 1, `${strategy}: only the table that has a header`);
      t.equal(chunk.tableHeader, 'name | default');
      t.notOk(chunk.text.includes('name | default'), `${strategy}: the text is unchanged, a slice past the header`);
    }
    t.same(chunks.filter((chunk) => chunk.startElement !== 1 && chunk.tableHeader !== undefined), [], `${strategy}: chunks starting elsewhere name none`);
  }
});

t.test('table and code overlap is whole rows and lines, or none', async (t) => {
  // A cell's "Paid." is a sentence end, but a chunk of a table only opens at a row.
  const rows = ['Code | Note', ...Array.from({ length: 6 }, (_, index) => `C-${index} | Paid. Settled in full ${index}`)];
  const table: DocumentElement = { type: 'table', text: rows.join('\n'), headingPath: [], tableHeader: rows[0] };
  const code: DocumentElement = {
    type: 'code',
    text: Array.from({ length: 10 }, (_, index) => `result_value_${index} = compute_something(alpha_${index}, beta_${index}, gamma)`).join('\n'),
    headingPath: [],
  };
  const codeLines = code.text.split('\n');
  for (const strategy of ['recursive', 'paragraph'] as const) {
    // A 35-character overlap holds one 29-character row: each chunk repeats the previous one's last row.
    const tableChunks = chunkElements([table], { chunkSize: 80, chunkOverlap: 35, strategy });
    t.same(tableChunks.map((chunk) => chunk.text), [
      'Code | Note\nC-0 | Paid. Settled in full 0\nC-1 | Paid. Settled in full 1',
      'C-1 | Paid. Settled in full 1\nC-2 | Paid. Settled in full 2',
      'C-2 | Paid. Settled in full 2\nC-3 | Paid. Settled in full 3',
      'C-3 | Paid. Settled in full 3\nC-4 | Paid. Settled in full 4',
      'C-4 | Paid. Settled in full 4\nC-5 | Paid. Settled in full 5',
    ], `${strategy}: table`);
    t.same(tableChunks.slice(1).map((chunk) => chunk.tableHeader), Array(4).fill('Code | Note'), `${strategy}: the header lines up with whole rows`);
    // A 40-character overlap holds none of the 60-character lines: no overlap rather than half a line.
    const codeChunks = chunkElements([code], { chunkSize: 200, chunkOverlap: 40, strategy });
    t.same(codeChunks.map((chunk) => chunk.text.split('\n')), [codeLines.slice(0, 3), codeLines.slice(3, 6), codeLines.slice(6, 9), codeLines.slice(9)], `${strategy}: code, no overlap`);
    // 130 characters hold two lines and their line break.
    const wider = chunkElements([code], { chunkSize: 200, chunkOverlap: 130, strategy }).map((chunk) => chunk.text.split('\n'));
    t.same(wider.slice(0, 3), [codeLines.slice(0, 3), codeLines.slice(1, 4), codeLines.slice(2, 5)], `${strategy}: code, whole lines`);
  }
});

t.test('paragraph strategy overlaps packed paragraphs at a word or sentence start', async (t) => {
  const elements = [
    'Alpha one two three. Four five six seven eight nine ten.',
    'Beta eleven twelve. Thirteen fourteen fifteen sixteen.',
    'Gamma seventeen eighteen. Nineteen twenty twenty-one.',
    'Delta last words here. The end.',
  ].map((text) => paragraph(text));
  // No whole paragraph fits in 30 characters: the next chunk opens with the last one's last words.
  t.same(outline(chunkElements(elements, { chunkSize: 120, chunkOverlap: 30, strategy: 'paragraph' })), [
    ['Alpha one two three. Four five six seven eight nine ten.\n\nBeta eleven twelve. Thirteen fourteen fifteen sixteen.', 0, 1, 0],
    ['fourteen fifteen sixteen.\n\nGamma seventeen eighteen. Nineteen twenty twenty-one.\n\nDelta last words here. The end.', 1, 3, 87],
  ]);
  // Chunks still end between paragraphs, and overlap 0 packs them as before.
  t.same(outline(chunkElements(elements, { chunkSize: 120, chunkOverlap: 0, strategy: 'paragraph' })), [
    ['Alpha one two three. Four five six seven eight nine ten.\n\nBeta eleven twelve. Thirteen fourteen fifteen sixteen.', 0, 1, 0],
    ['Gamma seventeen eighteen. Nineteen twenty twenty-one.\n\nDelta last words here. The end.', 2, 3, 114],
  ]);
  // On a long document every pair of neighbouring chunks shares text, within the overlap.
  const document = syntheticDocument().filter((element) => element.type === 'paragraph');
  const chunks = chunkElements(document, { chunkSize: 300, chunkOverlap: 60, strategy: 'paragraph' });
  let unshared = 0;
  for (let index = 1; index < chunks.length; index++) {
    const previous = chunks[index - 1]!;
    const repeated = (previous.charStart as number) + previous.text.length - (chunks[index]!.charStart as number);
    if (repeated <= 0 || repeated > 60) unshared++;
  }
  t.ok(chunks.length > 20, `${chunks.length} chunks`);
  t.equal(unshared, 0, 'each chunk repeats at most 60 characters of the one before, and some');
});

t.test('text without spaces splits at 。！？ and 、, and hard splits overlap too', async (t) => {
  const japanese = 'これは日本語の文章です、とても長い説明が続きます。次の文もまた長く続いていきます！本当にそうですか？'.repeat(4);
  t.same(chunkElements([paragraph(japanese)], { chunkSize: 100, chunkOverlap: 20, strategy: 'recursive' }).map((chunk) => chunk.text), [
    'これは日本語の文章です、とても長い説明が続きます。次の文もまた長く続いていきます！本当にそうですか？これは日本語の文章です、とても長い説明が続きます。',
    'とても長い説明が続きます。次の文もまた長く続いていきます！本当にそうですか？これは日本語の文章です、とても長い説明が続きます。',
    'とても長い説明が続きます。次の文もまた長く続いていきます！本当にそうですか？これは日本語の文章です、とても長い説明が続きます。次の文もまた長く続いていきます！本当にそうですか？',
  ]);
  // With 。 the only sentence end, the overlap still opens on a sentence, not after the 、 before it
  // or mid-word ("た長く続いて...").
  const periodsOnly = 'これは日本語の文章です、とても長い説明が続きます。次の文もまた長く続いていきます。本当にそうですね。'.repeat(4);
  for (const chunkOverlap of [20, 30, 40]) {
    const chunks = chunkElements([paragraph(periodsOnly)], { chunkSize: 100, chunkOverlap, strategy: 'recursive' });
    t.ok(chunks.length > 2, `overlap ${chunkOverlap}: ${chunks.length} chunks`);
    t.same(chunks.slice(1).map((chunk) => periodsOnly[(chunk.charStart as number) - 1]), chunks.slice(1).map(() => '。'), `overlap ${chunkOverlap}: each chunk opens after a 。`);
  }
  // A token longer than a chunk is cut short enough that the next piece fits beside its overlap.
  const token = 'abcdefghij'.repeat(5);
  for (const strategy of ['recursive', 'paragraph'] as const) {
    t.same(chunkElements([paragraph(`see ${token} done`)], { chunkSize: 20, chunkOverlap: 5, strategy }).map((chunk) => chunk.text), [
      'see abcdefghijabcde', 'abcdefghijabcdefghij', 'fghijabcdefghijabcde', 'abcdefghij done',
    ], strategy);
  }
});

t.test('a heading opens a chunk with the start of an oversized element below it', async (t) => {
  const elements: DocumentElement[] = [heading('L', 1, []), paragraph('x'.repeat(400_000), ['L'])];
  for (const strategy of ['recursive', 'paragraph'] as const) {
    const chunks = chunkElements(elements, { chunkSize: 200, chunkOverlap: 20, strategy });
    t.equal(chunks[0]!.text, `L\n\n${'x'.repeat(180)}`, `${strategy}: not "L" alone`);
    t.ok(chunks.every((chunk) => chunk.text.length <= 200), strategy);
    t.equal(chunks.length, Math.ceil(400_000 / 180), `${strategy}: pieces of 180 plus 20 of overlap`);
  }
  // A first sentence that fills a chunk is split into words so the heading fits beside its start.
  const oversized = paragraph(`${'word '.repeat(19)}end. Second sentence.`, ['Setup']);
  for (const strategy of ['recursive', 'paragraph'] as const) {
    const chunks = chunkElements([heading('Setup', 2, []), oversized], { chunkSize: 100, chunkOverlap: 0, strategy });
    t.same(chunks.map((chunk) => chunk.text), [`Setup\n\n${'word '.repeat(17)}word`, 'word end. Second sentence.'], strategy);
  }
});

t.test('a header row longer than half a chunk is not carried', async (t) => {
  const header = Array.from({ length: 12 }, (_, index) => `column ${index}`).join(' | ');
  const rows = [header, ...Array.from({ length: 8 }, (_, index) => `${index} | value ${index}`)];
  const chunks = chunkElements([{ type: 'table', text: rows.join('\n'), headingPath: [], tableHeader: header }], { chunkSize: 200, chunkOverlap: 0, strategy: 'recursive' });
  t.ok(header.length > 100 && chunks.length >= 2, `a ${header.length}-character header, ${chunks.length} chunks`);
  t.same(chunks.filter((chunk) => chunk.tableHeader !== undefined), []);
});
