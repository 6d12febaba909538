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
    ['Options\n\nname | default\nsize | 10\ncolor | red', 4, 5, 99],
    // "## Usage" opens a new section: no overlap from "Options" and the heading leads its content.
    ['Usage\n\nOne two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen', 6, 7, 146],
    // The 131-character paragraph alone exceeds 100, so it falls back to recursive splitting.
    ['thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.', 7, 7, 216],
    ['Short tail.', 8, 8, 287],
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
