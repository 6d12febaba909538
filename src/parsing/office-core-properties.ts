/**
 * The core properties of an OOXML file (docProps/core.xml), which Word and PowerPoint files share:
 * dc:title, dc:creator (`author`), dc:description else dc:subject (`description`), cp:keywords (a
 * list), dcterms:created/modified (`created_at`/`modified_at`).
 */
import { collapseWhitespace, documentPropertyMetadata } from './document-properties.js';

export const CORE_PROPERTIES_ENTRY = 'docProps/core.xml';

const xmlEntities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeXmlText(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (whole, name: string) => {
    if (name[0] !== '#') return xmlEntities[name] ?? whole;
    const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** The decoded text of one core property element (`dc:creator`), whitespace collapsed; undefined when absent or blank. */
export function coreProperty(coreXml: string | undefined, tag: string): string | undefined {
  // The name must end at the tag's end or an attribute: `dc:subject` is no prefix of another property.
  const match = coreXml === undefined ? null : new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`).exec(coreXml);
  const text = match ? collapseWhitespace(decodeXmlText(match[1]!)) : '';
  return text.length > 0 ? text : undefined;
}

/**
 * A W3CDTF date (`2024-01-31T12:00:00Z`, the format core.xml and OpenDocument's meta.xml use). A
 * time without a zone is read as UTC: `new Date` would read it in the server's zone, giving each
 * deployment its own answer.
 */
export function coreDate(value: string | undefined): Date | null {
  const match = value === undefined ? null : /^(\d{4}(?:-\d{2}(?:-\d{2})?)?)(T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(Z|[+-]\d{2}:\d{2})?$/.exec(value);
  if (!match) return null;
  const [, date, time, zone] = match;
  return new Date(time ? `${date}${time}${zone ?? 'Z'}` : date!);
}

export function coreProperties(coreXml: string | undefined): Record<string, unknown> {
  if (!coreXml) return {};
  return documentPropertyMetadata({
    author: coreProperty(coreXml, 'dc:creator'),
    description: coreProperty(coreXml, 'dc:description') ?? coreProperty(coreXml, 'dc:subject'),
    keywords: coreProperty(coreXml, 'cp:keywords'),
    created: coreDate(coreProperty(coreXml, 'dcterms:created')),
    modified: coreDate(coreProperty(coreXml, 'dcterms:modified')),
  });
}
