/**
 * Raw HTML blocks in Markdown (`<h1 align="center">Widget</h1>`, `<table>`, `<details>`, common in
 * READMEs) read as the `html` parser reads a page, through src/parsing/html-elements.ts: an HTML
 * heading is a heading and names the document like a `#` heading; a table gives one "a | b" line
 * per row, as a Markdown table does; scripts and styles are dropped. Stripping the tags instead
 * left a README's title heading as a plain paragraph (23 fastify docs had no title) and table
 * cells on lines of their own.
 */
import { DomUtils, parseDocument } from 'htmlparser2';
import type { DocumentElement } from '../../../src/plugins.js';
import { htmlToElements } from '../../../src/parsing/html-elements.js';
import { escapeHtml } from '../../../src/parsing/html-escape.js';

const headingTags = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

/** htmlparser2's element type, named through its own exports (domhandler is not our dependency). */
type HtmlElement = ReturnType<typeof DomUtils.getElementsByTagName>[number];

function enclosingHeading(node: HtmlElement): HtmlElement | undefined {
  for (let parent = node.parent; parent; parent = parent.parent) {
    if ('name' in parent && headingTags.has(parent.name)) return parent;
  }
  return undefined;
}

/**
 * Writes the alt text of each picture in a heading into the HTML in its place when the heading has
 * no words of its own, and drops the picture otherwise. A logo heading (`<h1><img alt="Chalk"></h1>`)
 * is then named by its logo, while badges beside a project name stay out of its heading path and
 * title. html-elements.ts itself drops pictures it cannot fetch, so it would see the logo heading
 * as empty.
 */
function headingPicturesAsText(html: string): string {
  // Most blocks (comments, anchors, tables) hold no picture and need no DOM built.
  if (!/<img/i.test(html)) return html;
  const document = parseDocument(html, { withStartIndices: true, withEndIndices: true });
  const edits: Array<{ start: number; end: number; text: string }> = [];
  for (const image of DomUtils.getElementsByTagName('img', document)) {
    const heading = enclosingHeading(image);
    if (!heading || image.startIndex === null || image.endIndex === null) continue;
    const named = DomUtils.textContent(heading).trim().length > 0;
    edits.push({ start: image.startIndex, end: image.endIndex + 1, text: named ? '' : ` ${escapeHtml(image.attribs.alt ?? '')} ` });
  }
  // From the last edit back, so the offsets of the earlier ones still hold.
  return edits
    .sort((a, b) => b.start - a.start)
    .reduce((text, edit) => text.slice(0, edit.start) + edit.text + text.slice(edit.end), html);
}

/** The elements of one raw HTML block; their headingPath is the caller's to set. */
export function htmlBlockElements(html: string): DocumentElement[] {
  return htmlToElements(headingPicturesAsText(html)).elements;
}
