/**
 * HTML → document elements in one pass of htmlparser2's streaming parser (no DOM is built). Used
 * by the `html` parser for web pages and by the `docx` parser for mammoth's HTML.
 *
 * h1-h6 → `heading`; text of p, div and other blocks → `paragraph` (text between two block
 * boundaries is one paragraph, which handles "div soup"); ul/ol → one `list` ("- item" lines,
 * "3. item" in ordered lists, nested items indented); table → `table` ("a | b" lines, in document
 * order, so a header row comes first; a caption becomes a paragraph before it); pre → `code`
 * (whitespace kept, metadata.language from a `language-x` class); img → `image` when the caller's
 * `resolveImage` knows the picture (its alt text is the element's text), else its alt text stays
 * in the surrounding text, as Markdown's does. Inline <code> stays
 * inside its sentence: making it an element would cut "call <code>f()</code> first" into three.
 *
 * Page chrome is skipped with its content (src/parsing/html-boilerplate.ts). Exceptions: a
 * <header> inside <article> or <main> is the article's own header (it usually holds the h1), and
 * cookie/consent banner candidates are kept when dropping them would leave no text at all.
 * Whitespace collapses to single spaces except in <pre>; <br> keeps a line break in paragraphs.
 * The title is <title>, else the first h1. With `documentProperties`, <meta name="author">,
 * "description" and "keywords" become metadata (src/parsing/document-properties.ts).
 */
import { Parser as HtmlTokenizer } from 'htmlparser2';
import type { DocumentElement, ParsedDocument } from '../plugins.js';
import { collapseWhitespace, documentPropertyMetadata } from './document-properties.js';
import { boilerplateTags, isBoilerplateElement, isConsentBanner } from './html-boilerplate.js';
import { HeadingTrail } from './heading-trail.js';
import { tableRowText } from './table-row-text.js';

/** What an <img> becomes: its picture when the bytes are at hand, and metadata for the element. */
export interface ResolvedImage {
  image?: { data: Buffer; contentType: string };
  metadata?: Record<string, unknown>;
}

export interface HtmlElementOptions {
  /** Looks up an <img src>; undefined drops the picture (e.g. a remote URL the service will not fetch), not its alt text. */
  resolveImage?: (src: string) => ResolvedImage | undefined;
  /**
   * Reads the page's <meta> author, description and keywords into `metadata`. Only for a whole page:
   * a fragment (a raw HTML block in Markdown) describes no document, and a <meta> pasted into one
   * would otherwise put a stranger's name on the Markdown file's chunks.
   */
  documentProperties?: boolean;
}

const sectioningTags = new Set(['article', 'main']);
const headingLevels: Record<string, number> = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 };
const blockTags = new Set([
  'address', 'article', 'blockquote', 'body', 'caption', 'center', 'dd', 'details', 'dialog', 'div', 'dl', 'dt',
  'fieldset', 'figcaption', 'figure', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'html', 'li', 'main',
  'ol', 'p', 'pre', 'section', 'summary', 'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
]);

/** Collapses runs of whitespace within lines, trims lines and drops empty ones. */
function tidyLines(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter((line) => line.length > 0)
    .join('\n');
}

function codeLanguage(attributes: Record<string, string>): string | undefined {
  return /(?:^|\s)(?:language|lang)-([\w+#.-]+)/.exec(attributes.class ?? '')?.[1];
}

interface OpenList {
  ordered: boolean;
  nextNumber: number;
}

/** Receives htmlparser2's events and builds the element list. */
class HtmlElementCollector {
  readonly elements: DocumentElement[] = [];
  title: string | undefined;
  firstH1: string | undefined;
  readonly meta: { author?: string; description?: string; keywords: string[] } = { keywords: [] };

  private readonly trail = new HeadingTrail();
  /** Open elements inside the skipped region (htmlparser2 balances every open with a close, implied ones included). */
  private skipDepth = 0;
  private sectioningDepth = 0;
  private inTitle = false;
  private titleText = '';
  private paragraphText = '';
  private heading: { level: number; text: string } | undefined;
  private pre: { text: string; language: string | undefined; depth: number } | undefined;
  private readonly lists: OpenList[] = [];
  private listLines: string[] = [];
  private listItem: string | undefined;
  private tableDepth = 0;
  private tableRows: string[][] = [];
  /** Per row of tableRows: whether every cell is a header cell (th, or any cell inside thead). */
  private tableHeaderRows: boolean[] = [];
  private inTableHead = false;
  private tableCaption = '';
  private inCaption = false;
  /** Images met inside a list, table or heading, emitted after it so they do not cut it in two. */
  private pendingImages: DocumentElement[] = [];
  /** Whether an element looked like a cookie/consent banner (skipped unless keepConsentBanners). */
  consentBannerSeen = false;

  constructor(
    private readonly options: HtmlElementOptions,
    private readonly keepConsentBanners: boolean,
  ) {}

  private get inStructure(): boolean {
    return this.lists.length > 0 || this.tableDepth > 0;
  }

  private isSkipped(name: string, attributes: Record<string, string>): boolean {
    if (name === 'header' && this.sectioningDepth > 0) return false;
    if (boilerplateTags.has(name) || isBoilerplateElement(attributes)) return true;
    if (!isConsentBanner(name, attributes)) return false;
    this.consentBannerSeen = true;
    return !this.keepConsentBanners;
  }

  onopentag(name: string, attributes: Record<string, string>): void {
    if (this.skipDepth > 0 || this.isSkipped(name, attributes)) {
      this.skipDepth++;
      return;
    }
    if (name === 'meta') this.readMeta(attributes);
    if (name === 'title') this.inTitle = true;
    if (sectioningTags.has(name)) this.sectioningDepth++;
    if (this.pre) {
      if (name === 'pre') this.pre.depth++;
      if (name === 'br') this.pre.text += '\n';
      this.pre.language ??= name === 'code' ? codeLanguage(attributes) : undefined;
      return;
    }
    if (name === 'br') {
      this.appendText('\n');
      return;
    }
    if (name === 'img') {
      this.addImage(attributes);
      return;
    }
    if (blockTags.has(name)) this.blockBoundary();
    if (this.tableDepth > 0) this.openTablePart(name);
    else if (this.lists.length > 0) this.openListPart(name);
    else if (name === 'table') this.tableDepth = 1;
    else if (name === 'ul' || name === 'ol') this.openListPart(name, attributes);
    else if (name in headingLevels) this.heading = { level: headingLevels[name], text: '' };
    else if (name === 'pre') this.pre = { text: '', language: codeLanguage(attributes), depth: 1 };
  }

  ontext(text: string): void {
    if (this.skipDepth > 0) return;
    if (this.inTitle) this.titleText += text;
    else if (this.pre) this.pre.text += text;
    else this.appendText(text.replace(/\s+/g, ' '));
  }

  onclosetag(name: string): void {
    if (this.skipDepth > 0) {
      this.skipDepth--;
      return;
    }
    if (name === 'title') {
      this.inTitle = false;
      this.title ??= collapseWhitespace(this.titleText) || undefined;
    }
    if (sectioningTags.has(name)) this.sectioningDepth--;
    if (this.pre) {
      if (name === 'pre' && --this.pre.depth === 0) this.closePre();
      return;
    }
    if (this.tableDepth > 0) this.closeTablePart(name);
    else if (this.lists.length > 0) this.closeListPart(name);
    else if (this.heading && name in headingLevels) this.closeHeading();
    if (blockTags.has(name)) this.blockBoundary();
  }

  onend(): void {
    this.blockBoundary();
    this.flushPendingImages();
  }

  /** The first non-blank author and description count; every keywords tag adds its keywords. */
  private readMeta(attributes: Record<string, string>): void {
    const content = attributes.content ?? '';
    if (content.trim().length === 0) return;
    const name = (attributes.name ?? '').trim().toLowerCase();
    if (name === 'author') this.meta.author ??= content;
    else if (name === 'description') this.meta.description ??= content;
    else if (name === 'keywords') this.meta.keywords.push(content);
  }

  private appendText(text: string): void {
    if (this.tableDepth > 0) {
      if (this.inCaption) this.tableCaption += text;
      else {
        const row = this.tableRows[this.tableRows.length - 1];
        if (row && row.length > 0) row[row.length - 1] += text;
      }
    } else if (this.lists.length > 0) {
      this.listItem = (this.listItem ?? '  '.repeat(this.lists.length - 1)) + text;
    } else if (this.heading) this.heading.text += text;
    else this.paragraphText += text;
  }

  /** A block starts or ends: inline text so far is one paragraph (inside a list item or cell, a space). */
  private blockBoundary(): void {
    if (this.inStructure || this.heading) {
      this.appendText(' ');
      return;
    }
    const text = tidyLines(this.paragraphText);
    this.paragraphText = '';
    if (text.length > 0) this.elements.push({ type: 'paragraph', text, headingPath: this.trail.path });
    this.flushPendingImages();
  }

  private addImage(attributes: Record<string, string>): void {
    const resolved = this.options.resolveImage?.(attributes.src ?? '');
    if (!resolved) {
      // The picture is out of reach (a remote URL), its description is not: a web page's diagram
      // was found by nothing, while the same page in Markdown kept its alt text in the sentence.
      const alt = collapseWhitespace(attributes.alt ?? '');
      if (alt) this.appendText(` ${alt} `);
      return;
    }
    const element: DocumentElement = {
      type: 'image',
      text: collapseWhitespace(attributes.alt ?? ''),
      headingPath: this.trail.path,
      ...(resolved.image ? { image: resolved.image } : {}),
      ...(resolved.metadata ? { metadata: resolved.metadata } : {}),
    };
    if (this.inStructure || this.heading) {
      this.pendingImages.push(element);
      return;
    }
    // The text before the picture is a paragraph of its own; the picture follows it in reading order.
    this.blockBoundary();
    this.elements.push(element);
  }

  private flushPendingImages(): void {
    if (this.pendingImages.length === 0 || this.inStructure || this.heading) return;
    for (const image of this.pendingImages) this.elements.push({ ...image, headingPath: this.trail.path });
    this.pendingImages = [];
  }

  private closeHeading(): void {
    const heading = this.heading as { level: number; text: string };
    this.heading = undefined;
    const text = collapseWhitespace(heading.text);
    if (text.length > 0) {
      if (heading.level === 1) this.firstH1 ??= text;
      this.elements.push({ type: 'heading', text, level: heading.level, headingPath: this.trail.enter(heading.level, text) });
    }
    this.flushPendingImages();
  }

  private closePre(): void {
    const pre = this.pre as { text: string; language: string | undefined };
    this.pre = undefined;
    // HTML drops one newline right after <pre>; trailing blank lines carry no content.
    const text = pre.text.replace(/^\n/, '').trimEnd();
    if (text.trim().length === 0) return;
    this.elements.push({
      type: 'code',
      text,
      headingPath: this.trail.path,
      ...(pre.language ? { metadata: { language: pre.language } } : {}),
    });
  }

  private openListPart(name: string, attributes: Record<string, string> = {}): void {
    if (name === 'ul' || name === 'ol') {
      this.finishListItem();
      const start = Number.parseInt(attributes.start ?? '1', 10);
      this.lists.push({ ordered: name === 'ol', nextNumber: Number.isFinite(start) ? start : 1 });
    } else if (name === 'li') {
      this.finishListItem();
      const list = this.lists[this.lists.length - 1];
      const marker = list.ordered ? `${list.nextNumber++}. ` : '- ';
      this.listItem = '  '.repeat(this.lists.length - 1) + marker;
    }
  }

  private closeListPart(name: string): void {
    if (name !== 'ul' && name !== 'ol') return;
    this.finishListItem();
    this.lists.pop();
    if (this.lists.length === 0) {
      const text = this.listLines.join('\n');
      this.listLines = [];
      if (text.length > 0) this.elements.push({ type: 'list', text, headingPath: this.trail.path });
      this.flushPendingImages();
    }
  }

  private finishListItem(): void {
    if (this.listItem === undefined) return;
    const indent = /^ */.exec(this.listItem)?.[0] ?? '';
    const content = collapseWhitespace(this.listItem);
    this.listItem = undefined;
    // A bare marker ("- ") is an item whose text all sits in a nested list.
    if (content.length > 0 && !/^(-|\d+\.)$/.test(content)) this.listLines.push(indent + content);
  }

  private openTablePart(name: string): void {
    if (name === 'table') this.tableDepth++;
    // Rows and cells of a nested table read as text of the outer cell.
    if (this.tableDepth > 1) return;
    if (name === 'tr') this.startTableRow();
    else if (name === 'td' || name === 'th') {
      if (this.tableRows.length === 0) this.startTableRow();
      this.tableRows[this.tableRows.length - 1].push('');
      if (name === 'td' && !this.inTableHead) this.tableHeaderRows[this.tableHeaderRows.length - 1] = false;
    } else if (name === 'thead') this.inTableHead = true;
    else if (name === 'caption') this.inCaption = true;
  }

  private startTableRow(): void {
    this.tableRows.push([]);
    this.tableHeaderRows.push(true);
  }

  private closeTablePart(name: string): void {
    if (name === 'caption') this.inCaption = false;
    if (name === 'thead' && this.tableDepth === 1) this.inTableHead = false;
    if (name !== 'table' || --this.tableDepth > 0) return;
    const caption = collapseWhitespace(this.tableCaption);
    const rows = this.tableRows
      .map((cells, index) => ({ line: cells.map(collapseWhitespace), header: this.tableHeaderRows[index]! }))
      .filter((row) => row.line.some((cell) => cell.length > 0))
      .map((row) => ({ line: tableRowText(row.line), header: row.header }));
    const text = rows.map((row) => row.line).join('\n');
    this.tableRows = [];
    this.tableHeaderRows = [];
    this.inTableHead = false;
    this.tableCaption = '';
    if (caption.length > 0) this.elements.push({ type: 'paragraph', text: caption, headingPath: this.trail.path });
    // Only a first row of header cells is a header: a first row of data would mislabel the rest.
    const tableHeader = rows.length > 1 && rows[0]!.header ? { tableHeader: rows[0]!.line } : {};
    if (text.length > 0) this.elements.push({ type: 'table', text, headingPath: this.trail.path, ...tableHeader });
    this.flushPendingImages();
  }
}

function collectElements(html: string, options: HtmlElementOptions, keepConsentBanners: boolean): HtmlElementCollector {
  const collector = new HtmlElementCollector(options, keepConsentBanners);
  const tokenizer = new HtmlTokenizer(
    {
      onopentag: (name, attributes) => collector.onopentag(name, attributes),
      ontext: (text) => collector.ontext(text),
      onclosetag: (name) => collector.onclosetag(name),
      onend: () => collector.onend(),
    },
    { decodeEntities: true },
  );
  tokenizer.end(html);
  return collector;
}

function holdsText(collector: HtmlElementCollector): boolean {
  return collector.elements.some((element) => element.text.trim().length > 0);
}

export function htmlToElements(html: string, options: HtmlElementOptions = {}): ParsedDocument {
  let collector = collectElements(html, options, false);
  // Banners are recognised by their class and id names, a guess: when it leaves nothing to read, the
  // "banner" was the content (a cookie policy in <div id="cookies">, a notice written into a Markdown
  // file), and the page would fail as empty. A page that really is only a banner costs one chunk.
  if (collector.consentBannerSeen && !holdsText(collector)) collector = collectElements(html, options, true);
  const title = collector.title ?? collector.firstH1;
  const { author, description, keywords } = collector.meta;
  const metadata = options.documentProperties ? documentPropertyMetadata({ author, description, keywords: keywords.join(',') }) : {};
  return {
    elements: collector.elements,
    ...(title !== undefined ? { title } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
}
