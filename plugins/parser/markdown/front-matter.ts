/**
 * YAML front matter: "---" on the first line, up to a closing "---" or "...", read with the
 * `yaml` package (YAML 1.2 core schema, so dates stay the strings they were written as). Its `title` names the document; the whole mapping becomes the document's
 * metadata. A block that is YAML but not a mapping ("---\nSome text\n---" is a thematic break and
 * a setext heading in Markdown) is left in the body as Markdown; one that does not parse is front
 * matter gone wrong, dropped without metadata rather than indexed as a heading of YAML syntax.
 */
import { parse } from 'yaml';

export interface FrontMatter {
  /** The document after the front matter. */
  body: string;
  metadata: Record<string, unknown>;
}

const frontMatterBlock = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

function yamlMapping(source: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = parse(source, { schema: 'core', uniqueKeys: false });
  } catch {
    return {};
  }
  if (value === null || value === undefined) return {};
  return typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : null;
}

export function splitFrontMatter(markdown: string): FrontMatter {
  const block = frontMatterBlock.exec(markdown);
  if (!block) return { body: markdown, metadata: {} };
  const metadata = yamlMapping(block[1] ?? '');
  if (metadata === null) return { body: markdown, metadata: {} };
  return { body: markdown.slice(block[0].length), metadata };
}
