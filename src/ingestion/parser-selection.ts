import path from 'node:path';
import type { Parser } from '../plugins.js';

export interface ParserChoice {
  parser: Parser;
  /** The content type the service records for the document. */
  contentType: string;
}

function baseType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * Picks the parser for an upload: the file extension first (clients often send
 * application/octet-stream), then the declared content type. null means unsupported (415).
 */
export function selectParser(parsers: readonly Parser[], filename: string, contentType: string | undefined): ParserChoice | null {
  const extension = path.extname(filename).slice(1).toLowerCase();
  const byExtension = extension ? parsers.find((parser) => parser.extensions.includes(extension)) : undefined;
  if (byExtension) return { parser: byExtension, contentType: byExtension.contentTypes[0] ?? baseType(contentType) };
  const type = baseType(contentType);
  const byType = parsers.find((parser) => parser.contentTypes.includes(type));
  return byType ? { parser: byType, contentType: type } : null;
}

export function supportedTypesDescription(parsers: readonly Parser[]): string {
  const extensions = [...new Set(parsers.flatMap((parser) => parser.extensions))].map((extension) => `.${extension}`);
  const types = [...new Set(parsers.flatMap((parser) => parser.contentTypes))];
  return `${extensions.join(', ')} (${types.join(', ')})`;
}
