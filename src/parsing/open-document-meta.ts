/**
 * The properties of an OpenDocument file (meta.xml), which its text documents and spreadsheets
 * share: dc:title, dc:creator else meta:initial-creator (`author`), dc:description else dc:subject
 * (`description`), each meta:keyword, meta:creation-date and dc:date (`created_at`, `modified_at`).
 */
import { documentPropertyMetadata } from './document-properties.js';
import { coreDate, coreProperty } from './office-core-properties.js';

export const OPEN_DOCUMENT_META_ENTRY = 'meta.xml';

export function openDocumentTitle(metaXml: string | undefined): string | undefined {
  return coreProperty(metaXml, 'dc:title');
}

export function openDocumentProperties(metaXml: string | undefined): Record<string, unknown> {
  if (!metaXml) return {};
  const keywords = [...metaXml.matchAll(/<meta:keyword>([\s\S]*?)<\/meta:keyword>/g)].map((match) => match[1]!);
  return documentPropertyMetadata({
    author: coreProperty(metaXml, 'dc:creator') ?? coreProperty(metaXml, 'meta:initial-creator'),
    description: coreProperty(metaXml, 'dc:description') ?? coreProperty(metaXml, 'dc:subject'),
    keywords: keywords.join(','),
    created: coreDate(coreProperty(metaXml, 'meta:creation-date')),
    modified: coreDate(coreProperty(metaXml, 'dc:date')),
  });
}
