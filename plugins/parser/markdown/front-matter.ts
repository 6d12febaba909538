/**
 * YAML front matter ("---" on the first line, up to a closing "---" or "..."). Only top-level
 * `key: value` lines with a simple scalar value (string, number, boolean) are read (its `title`
 * names the document); nested maps, lists and block scalars are skipped rather than half-parsed,
 * so the service needs no YAML parser.
 */
export interface FrontMatter {
  /** The document after the front matter. */
  body: string;
  metadata: Record<string, string | number | boolean>;
}

const frontMatterBlock = /^---[ \t]*\n(?:([\s\S]*?)\n)?(?:---|\.\.\.)[ \t]*(?:\n|$)/;
const scalarLine = /^([A-Za-z_][\w.-]*)[ \t]*:[ \t]+(.+)$/;

function scalarValue(written: string): string | number | boolean | undefined {
  const value = written.replace(/[ \t]+#.*$/, '').trim();
  if (value === '' || /^[[{|>&*!]/.test(value)) return undefined;
  const quoted = /^(["'])(.*)\1$/.exec(value);
  if (quoted) return quoted[1] === '"' ? quoted[2].replace(/\\"/g, '"') : quoted[2].replace(/''/g, "'");
  if (/^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  if (/^(null|~)$/i.test(value)) return undefined;
  if (/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(value)) return Number(value);
  return value;
}

export function splitFrontMatter(markdown: string): FrontMatter {
  const block = frontMatterBlock.exec(markdown);
  if (!block) return { body: markdown, metadata: {} };
  const metadata: Record<string, string | number | boolean> = {};
  for (const line of (block[1] ?? '').split('\n')) {
    const pair = scalarLine.exec(line);
    if (!pair) continue;
    const value = scalarValue(pair[2]);
    if (value !== undefined) metadata[pair[1]] = value;
  }
  return { body: markdown.slice(block[0].length), metadata };
}
