/**
 * The `docx` parser: Word documents through mammoth, which turns the document's structure
 * (heading styles, numbering, tables, pictures) into semantic HTML; that HTML becomes elements
 * the same way a web page does (src/parsing/html-elements.ts): headings with levels and heading
 * paths, paragraphs, lists, tables, and each picture as an `image` element with its bytes.
 *
 * The zip container is checked before mammoth inflates anything (src/parsing/zip-inspection.ts):
 * a truncated archive or a zip bomb fails here with a reason, never as an out-of-memory crash.
 * mammoth's access to files outside the document (linked pictures) stays off.
 * The title is the document's own (docProps/core.xml dc:title), else the first heading 1. The
 * other core properties are metadata: dc:creator (`author`), dc:description else dc:subject
 * (`description`), cp:keywords (a list), dcterms:created/modified (`created_at`/`modified_at`).
 */
import type { ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { DocumentParseError, reasonOf } from '../../../src/parsing/document-parse-error.js';
import { htmlToElements, type ResolvedImage } from '../../../src/parsing/html-elements.js';
import { CORE_PROPERTIES_ENTRY, coreProperties, coreProperty } from '../../../src/parsing/office-core-properties.js';
import { PORTABLE_IMAGE_TYPES } from '../../../src/parsing/portable-image-types.js';
import { inspectZipArchive, officeDocumentLimits } from '../../../src/parsing/zip-inspection.js';

/** Word's own "Title" and "Subtitle" styles are headings of the document, not body text. */
const styleMap = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"];
const imageSourcePrefix = 'docx-image:';

interface CapturedImage {
  data: Buffer;
  contentType: string;
}

/**
 * mammoth ends each footnote and endnote with a link back to its reference, an arrow: it read as
 * the note's last word ("Otters hold hands. ↑"), in the text and in every chunk of the note.
 */
function withoutNoteBackLinks(html: string): string {
  return html.replace(/\s*<a href="#(?:footnote|endnote)-ref-[^"]*">\u2191<\/a>/g, '');
}

async function parseDocx(data: Buffer): Promise<ParsedDocument> {
  if (data.length === 0) throw new DocumentParseError('DOCX', 'the file is empty');
  const kept = await inspectZipArchive(data, 'DOCX', officeDocumentLimits, (name) => name === CORE_PROPERTIES_ENTRY);
  const { default: mammoth } = await import('mammoth');
  const images: CapturedImage[] = [];
  let html: string;
  try {
    const result = await mammoth.convertToHtml({ buffer: data }, {
      styleMap,
      externalFileAccess: false,
      convertImage: mammoth.images.imgElement(async (image) => {
        images.push({ data: await image.readAsBuffer(), contentType: (image.contentType ?? 'application/octet-stream').toLowerCase() });
        return { src: `${imageSourcePrefix}${images.length - 1}` };
      }),
    });
    html = withoutNoteBackLinks(result.value);
  } catch (error) {
    throw new DocumentParseError('DOCX content', reasonOf(error));
  }
  const resolveImage = (src: string): ResolvedImage | undefined => {
    const captured = src.startsWith(imageSourcePrefix) ? images[Number(src.slice(imageSourcePrefix.length))] : undefined;
    if (!captured) return undefined;
    const metadata = { content_type: captured.contentType };
    return PORTABLE_IMAGE_TYPES.has(captured.contentType) ? { image: captured, metadata } : { metadata };
  };
  const parsed = htmlToElements(html, { resolveImage });
  const coreXml = kept.get(CORE_PROPERTIES_ENTRY)?.toString('utf8');
  const title = coreProperty(coreXml, 'dc:title') ?? parsed.title;
  const metadata = coreProperties(coreXml);
  return {
    elements: parsed.elements,
    ...(title !== undefined ? { title } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
}

const docxParser: Parser = {
  name: 'docx',
  contentTypes: ['application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  extensions: ['docx'],
  mayHoldScans: true,
  parse(input: ParserInput): Promise<ParsedDocument> {
    return parseDocx(input.data);
  },
};

export const docxParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'docx',
  description: 'Word (.docx) via mammoth: headings, lists, tables, pictures; zip bombs and damaged archives refused before decompression',
  create: () => docxParser,
};
