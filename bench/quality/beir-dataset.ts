/**
 * Reads a BEIR-format test collection (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), with the
 * same rules as /work/shared/tools/bm25_eval.py so every quality benchmark evaluates the same
 * queries against the same judgements.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Judgements } from './metrics.js';

export interface BeirDocument {
  id: string;
  title: string;
  text: string;
}

export interface BeirDataset {
  documents: BeirDocument[];
  /** Query id → query text. */
  queries: Map<string, string>;
  /** Query id → judgements. */
  qrels: Map<string, Map<string, number>>;
  /**
   * Query ids (sorted as strings, like the script) that have a query text and at least one
   * judgement with grade > 0: the queries a benchmark averages over.
   */
  evaluatedQueryIds: string[];
}

async function readJsonLines(path: string): Promise<Record<string, unknown>[]> {
  const content = await readFile(path, 'utf8');
  return content
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : value == null ? '' : String(value);
}

async function readQrels(path: string): Promise<Map<string, Map<string, number>>> {
  const qrels = new Map<string, Map<string, number>>();
  const lines = (await readFile(path, 'utf8')).split('\n');
  lines.forEach((line, lineNumber) => {
    const parts = line.replace(/\r$/, '').split('\t');
    // The script skips a first line whose last column is not an integer (the header).
    if (lineNumber === 0 && !/^-?\d+$/.test(parts[parts.length - 1])) return;
    if (parts.length < 3) return;
    const [queryId, documentId, grade] = parts;
    let judgements = qrels.get(queryId);
    if (!judgements) qrels.set(queryId, (judgements = new Map()));
    judgements.set(documentId, Number.parseInt(grade, 10));
  });
  return qrels;
}

export async function readBeirDataset(folder: string, split = 'test'): Promise<BeirDataset> {
  const documents = (await readJsonLines(join(folder, 'corpus.jsonl'))).map((row) => ({
    id: asText(row._id),
    title: asText(row.title),
    text: asText(row.text),
  }));
  const queries = new Map(
    (await readJsonLines(join(folder, 'queries.jsonl'))).map((row) => [asText(row._id), asText(row.text)]),
  );
  const qrels = await readQrels(join(folder, 'qrels', `${split}.tsv`));
  const evaluatedQueryIds = [...qrels.keys()]
    .sort()
    .filter((id) => queries.has(id) && [...(qrels.get(id) as Judgements).values()].some((grade) => grade > 0));
  return { documents, queries, qrels, evaluatedQueryIds };
}
