/**
 * OpenDocument files written as LibreOffice writes them: the `mimetype` entry first and stored
 * (how the format is recognised), folder entries, a manifest, meta.xml, and content.xml whose body the test gives
 * as ODF XML, so the parsers are tested on the markup real documents and spreadsheets have.
 */
import { buildZip, type ZipEntry } from './document-fixtures.js';

const NAMESPACES = [
  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"',
  'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"',
  'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"',
  'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"',
  'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"',
  'xmlns:xlink="http://www.w3.org/1999/xlink"',
  'xmlns:dc="http://purl.org/dc/elements/1.1/"',
  'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"',
  'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"',
].join(' ');

export interface OpenDocumentOptions {
  /** The inside of office:text, office:spreadsheet or office:presentation, as ODF XML. */
  body: string;
  /** The inside of office:meta (dc:title, dc:creator, meta:keyword...); no meta.xml when absent. */
  meta?: string;
  /** Files under Pictures/, by name. */
  pictures?: Record<string, Buffer>;
}

const kinds = {
  text: { mimetype: 'application/vnd.oasis.opendocument.text', body: 'office:text', declarations: '<text:sequence-decls><text:sequence-decl text:display-outline-level="0" text:name="Illustration"/></text:sequence-decls>' },
  spreadsheet: { mimetype: 'application/vnd.oasis.opendocument.spreadsheet', body: 'office:spreadsheet', declarations: '<table:calculation-settings table:automatic-find-labels="false"/>' },
  presentation: { mimetype: 'application/vnd.oasis.opendocument.presentation', body: 'office:presentation', declarations: '' },
};

function buildOpenDocument(kind: keyof typeof kinds, { body, meta, pictures = {} }: OpenDocumentOptions): Buffer {
  const { mimetype, body: bodyElement, declarations } = kinds[kind];
  const content = `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${NAMESPACES} office:version="1.3">`
    + `<office:automatic-styles/><office:body><${bodyElement}>${declarations}${body}</${bodyElement}></office:body></office:document-content>`;
  const entries: ZipEntry[] = [
    { name: 'mimetype', data: Buffer.from(mimetype), stored: true },
    // LibreOffice lists the empty folders of its user interface settings before content.xml.
    { name: 'Configurations2/toolbar/', data: Buffer.alloc(0), stored: true },
    { name: 'Configurations2/floater/', data: Buffer.alloc(0), stored: true },
    {
      name: 'META-INF/manifest.xml',
      data: Buffer.from('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
        + `<manifest:file-entry manifest:full-path="/" manifest:media-type="${mimetype}"/>`
        + '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>'),
    },
    { name: 'content.xml', data: Buffer.from(content) },
  ];
  if (meta !== undefined) {
    entries.push({ name: 'meta.xml', data: Buffer.from(`<?xml version="1.0" encoding="UTF-8"?><office:document-meta ${NAMESPACES} office:version="1.3"><office:meta>${meta}</office:meta></office:document-meta>`) });
  }
  for (const [name, data] of Object.entries(pictures)) entries.push({ name: `Pictures/${name}`, data });
  return buildZip(entries);
}

/** An OpenDocument text (.odt). */
export const buildOdt = (options: OpenDocumentOptions) => buildOpenDocument('text', options);

/** An OpenDocument spreadsheet (.ods): `body` holds its table:table sheets. */
export const buildOds = (options: OpenDocumentOptions) => buildOpenDocument('spreadsheet', options);

/** An OpenDocument presentation (.odp): `body` holds its draw:page slides. */
export const buildOdp = (options: OpenDocumentOptions) => buildOpenDocument('presentation', options);
