/**
 * The `pdf` parser: pdfjs-dist (Mozilla's PDF.js, legacy build for Node) reads the text of every
 * page and the pictures painted on it. Every element carries its `page` (1-based), which the
 * chunker hands on to chunk metadata.
 *
 * Structure is guessed from the text geometry (./text-layout.ts): paragraphs from line spacing,
 * headings and their levels from font sizes. Pictures become `image` elements (PNG bytes, no
 * text) after their page's text (./page-images.ts). The title is the Info dictionary's Title,
 * else the first level-1 heading. Besides `pages`, metadata holds the Info dictionary's Author,
 * Subject (`description`), Keywords (a list) and CreationDate/ModDate (`created_at`/`modified_at`).
 *
 * pdfjs runs its "worker" in this thread (its fake worker: Node has no Web Workers), with eval off
 * (font programs are interpreted, never compiled from the file), no font faces, no canvas, and
 * pictures above 25 megapixels skipped. Everything stays in memory; nothing is written to disk.
 * pdfjs is imported on first use: it takes ~100 ms to load and most instances parse no PDFs.
 */
import type { TextItem } from 'pdfjs-dist/types/src/display/api.js';
import type { DocumentElement, ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { DocumentParseError, reasonOf } from '../../../src/parsing/document-parse-error.js';
import { collapseWhitespace, documentPropertyMetadata } from '../../../src/parsing/document-properties.js';
import { extractPageImages, type PageImage } from './page-images.js';
import { linesToElements, pageLines, withoutRunningLines, type TextLine } from './text-layout.js';

type Pdfjs = typeof import('pdfjs-dist/legacy/build/pdf.mjs');
type PdfDocument = Awaited<ReturnType<Pdfjs['getDocument']>['promise']>;

const MAX_IMAGE_PIXELS = 25_000_000;

let pdfjsModule: Promise<Pdfjs> | undefined;
const loadPdfjs = () => (pdfjsModule ??= import('pdfjs-dist/legacy/build/pdf.mjs'));

async function openPdf(pdfjs: Pdfjs, data: Buffer): Promise<PdfDocument> {
  try {
    // pdfjs takes ownership of (and may detach) the array it is given: hand it a copy.
    return await pdfjs.getDocument({
      data: new Uint8Array(data),
      isEvalSupported: false,
      disableFontFace: true,
      useSystemFonts: false,
      isOffscreenCanvasSupported: false,
      isImageDecoderSupported: false,
      maxImageSize: MAX_IMAGE_PIXELS,
      verbosity: pdfjs.VerbosityLevel.ERRORS,
    }).promise;
  } catch (error) {
    if ((error as Error | undefined)?.name === 'PasswordException') throw new DocumentParseError('PDF', 'the file is protected by a password');
    throw new DocumentParseError('PDF document structure', `the file is damaged or not a PDF (${reasonOf(error)})`);
  }
}

/** The Info dictionary's entries; an unreadable one reads as empty, never failing the text. */
async function documentInfo(pdf: PdfDocument): Promise<Record<string, unknown>> {
  const { info } = await pdf.getMetadata().catch(() => ({ info: undefined }));
  return typeof info === 'object' && info !== null ? info as Record<string, unknown> : {};
}

function documentTitle(info: Record<string, unknown>): string | undefined {
  const text = typeof info.Title === 'string' ? collapseWhitespace(info.Title) : '';
  return text.length > 0 ? text : undefined;
}

/** A PDF date ("D:20240131120000+01'00'"). Some writers leave out the "D:" the spec asks for; pdfjs then reads nothing. */
function pdfDate(pdfjs: Pdfjs, value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  return pdfjs.PDFDateString.toDateObject(/^\d{4}/.test(text) ? `D:${text}` : text);
}

function documentProperties(pdfjs: Pdfjs, info: Record<string, unknown>): Record<string, unknown> {
  return documentPropertyMetadata({
    author: info.Author,
    description: info.Subject,
    keywords: info.Keywords,
    created: pdfDate(pdfjs, info.CreationDate),
    modified: pdfDate(pdfjs, info.ModDate),
  });
}

interface PageContent {
  lines: TextLine[];
  images: PageImage[];
}

async function readPage(pdf: PdfDocument, pdfjs: Pdfjs, pageNumber: number, seenImages: Set<string>): Promise<PageContent> {
  const page = await pdf.getPage(pageNumber);
  try {
    const content = await page.getTextContent();
    const runs = content.items.filter((item): item is TextItem => 'str' in item);
    const [, bottom, , top] = page.view;
    const lines = pageLines({ page: pageNumber, height: (top ?? 0) - (bottom ?? 0), runs });
    // A picture pdfjs cannot decode costs the page its pictures, never the document its text.
    const images = await extractPageImages(page, pdfjs, seenImages).catch(() => []);
    return { lines, images };
  } finally {
    page.cleanup();
  }
}

/** Text elements with each page's pictures after the page's last text element. */
function withImages(textElements: DocumentElement[], imagesByPage: Map<number, PageImage[]>): DocumentElement[] {
  const pages = [...imagesByPage.keys()].sort((a, b) => a - b);
  const elements: DocumentElement[] = [];
  let nextPage = 0;
  let pathHere: string[] = [];
  const addImagesOfPagesBefore = (limit: number) => {
    for (; nextPage < pages.length && pages[nextPage]! < limit; nextPage++) {
      const page = pages[nextPage]!;
      for (const image of imagesByPage.get(page)!) {
        elements.push({ type: 'image', text: '', page, headingPath: pathHere, image: { data: image.data, contentType: 'image/png' }, metadata: { width: image.width, height: image.height } });
      }
    }
  };
  for (const element of textElements) {
    addImagesOfPagesBefore(element.page!);
    elements.push(element);
    pathHere = element.type === 'heading' ? [...element.headingPath, element.text] : element.headingPath;
  }
  addImagesOfPagesBefore(Infinity);
  return elements;
}

async function parsePdf(data: Buffer): Promise<ParsedDocument> {
  if (data.length === 0) throw new DocumentParseError('PDF', 'the file is empty');
  const pdfjs = await loadPdfjs();
  const pdf = await openPdf(pdfjs, data);
  try {
    const lines: TextLine[] = [];
    const imagesByPage = new Map<number, PageImage[]>();
    const seenImages = new Set<string>();
    for (let pageNumber = 1; pageNumber <= pdf.numPages; pageNumber++) {
      let content: PageContent;
      try {
        content = await readPage(pdf, pdfjs, pageNumber, seenImages);
      } catch (error) {
        throw new DocumentParseError(`PDF page ${pageNumber}`, reasonOf(error));
      }
      lines.push(...content.lines);
      if (content.images.length > 0) imagesByPage.set(pageNumber, content.images);
    }
    const textElements = linesToElements(withoutRunningLines(lines, pdf.numPages));
    const info = await documentInfo(pdf);
    const title = documentTitle(info) ?? textElements.find((element) => element.type === 'heading' && element.level === 1)?.text;
    return {
      elements: withImages(textElements, imagesByPage),
      ...(title !== undefined ? { title } : {}),
      metadata: { pages: pdf.numPages, ...documentProperties(pdfjs, info) },
    };
  } finally {
    await pdf.destroy();
  }
}

const pdfParser: Parser = {
  name: 'pdf',
  contentTypes: ['application/pdf'],
  extensions: ['pdf'],
  mayHoldScans: true,
  parse(input: ParserInput): Promise<ParsedDocument> {
    return parsePdf(input.data);
  },
};

export const pdfParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'pdf',
  description: 'PDF via pdfjs-dist: text per page (page numbers on chunks), headings from font sizes, embedded pictures as PNG',
  create: () => pdfParser,
};
