/**
 * A parser's result as PostgreSQL can store it. Text columns cannot hold a NUL character, and jsonb
 * (every row of elements and chunks is sent as one jsonb record set) refuses `\u0000` and half a
 * surrogate pair as well. Decoding drops the NULs of a file's bytes (decode-text.ts), but a parser
 * can still make both from what the file writes as escapes: JSON's `"\u0000"` and `"\ud800"`, YAML
 * front matter's `"\0"`, a PDF's `\000`, and whatever a plugin parser returns. Such a document was
 * parsed, then failed whole at its first write ("invalid input syntax for type json").
 *
 * Ingestion passes every parser's result through here once (src/ingestion/ingest-document.ts):
 * built-in or plugin, parsed where it is or on a thread. Chunks, heading paths, chunk metadata,
 * index entries and the document's title and source metadata are all made from it. Each such
 * character becomes U+FFFD, as the HTML and Markdown parsers already read `&#0;` and `&#xD800;`.
 * Nothing is copied where nothing needs replacing: 400k elements take 0.15-0.35 s, against minutes
 * to embed and index them.
 */
import { storableValue } from '../db/storable-values.js';
import type { DocumentElement, ParsedDocument } from '../plugins.js';

function storableImage(image: NonNullable<DocumentElement['image']>): NonNullable<DocumentElement['image']> {
  const contentType = storableValue(image.contentType);
  return contentType === image.contentType ? image : { ...image, contentType };
}

function storableElement(element: DocumentElement): DocumentElement {
  const type = storableValue(element.type);
  const text = storableValue(element.text);
  const headingPath = storableValue(element.headingPath);
  const metadata = storableValue(element.metadata);
  const tableHeader = storableValue(element.tableHeader);
  const image = element.image && storableImage(element.image);
  if (type === element.type && text === element.text && headingPath === element.headingPath && metadata === element.metadata
    && tableHeader === element.tableHeader && image === element.image) return element;
  return {
    ...element, type, text, headingPath,
    ...(metadata !== undefined ? { metadata } : {}),
    ...(tableHeader !== undefined ? { tableHeader } : {}),
    ...(image !== undefined ? { image } : {}),
  };
}

/** The parsed document with every string that is stored made storable (storableText); its own objects where nothing needed it. */
export function storableParsedDocument(parsed: ParsedDocument): ParsedDocument {
  const elements = parsed.elements.map(storableElement);
  const title = storableValue(parsed.title);
  const metadata = storableValue(parsed.metadata);
  return {
    ...parsed, elements,
    ...(title !== undefined ? { title } : {}),
    ...(metadata !== undefined ? { metadata } : {}),
  };
}
