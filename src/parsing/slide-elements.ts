/**
 * A slide's elements (the `pptx` and `odp` parsers): its title as a heading, then its content under
 * that title, then its speaker notes (`speaker_notes: true`), every element with `page` = the
 * slide's number.
 */
import type { DocumentElement } from '../plugins.js';
import { htmlToElements, type HtmlElementOptions } from './html-elements.js';

export interface Slide {
  page: number;
  title: string | undefined;
  /** The slide's content, as HTML. */
  html: string;
  /** Its speaker notes, as HTML; empty when it has none. */
  notesHtml: string;
}

export function slideElements({ page, title, html, notesHtml }: Slide, options: HtmlElementOptions = {}): DocumentElement[] {
  const headingPath = title === undefined ? [] : [title];
  const elements: DocumentElement[] = [];
  // A heading's path holds the headings above it, not itself.
  if (title !== undefined) elements.push({ type: 'heading', level: 1, text: title, headingPath: [], page });
  for (const element of htmlToElements(html, options).elements) elements.push({ ...element, headingPath, page });
  for (const element of htmlToElements(notesHtml).elements) {
    elements.push({ ...element, headingPath, page, metadata: { ...element.metadata, speaker_notes: true } });
  }
  return elements;
}
