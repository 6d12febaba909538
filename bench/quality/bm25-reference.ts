/**
 * Checks src/search/bm25.ts against the reference script: builds the in-memory BM25 index over a
 * BEIR collection (title + " " + text, as /work/shared/tools/bm25_eval.py does) and prints
 * nDCG@10 and recall@100. On Cranfield it must give the script's Porter figures,
 * nDCG@10 0.3632 and recall@100 0.7396 (/work/shared/datasets/README.md), within 0.001;
 * it exits 1 otherwise.
 *
 * Usage: npx tsx bench/quality/bm25-reference.ts [BEIR folder, default Cranfield]
 */
import { Bm25Index } from '../../src/search/bm25.js';
import { readBeirDataset } from './beir-dataset.js';
import { ndcgAtK, recallAtK } from './metrics.js';

const cranfieldFolder = '/work/shared/datasets/cranfield';
const cranfieldReference = { ndcgAt10: 0.3632, recallAt100: 0.7396 };
const tolerance = 0.001;

const folder = process.argv[2] ?? cranfieldFolder;
const startedAt = performance.now();
const dataset = await readBeirDataset(folder);

const index = new Bm25Index();
for (const document of dataset.documents) index.add(document.id, `${document.title} ${document.text}`.trim());

let ndcgSum = 0;
let recallSum = 0;
for (const queryId of dataset.evaluatedQueryIds) {
  const ranked = index.search(dataset.queries.get(queryId) ?? '', 100).map((hit) => hit.id);
  const judgements = dataset.qrels.get(queryId) ?? new Map<string, number>();
  ndcgSum += ndcgAtK(ranked, judgements, 10);
  recallSum += recallAtK(ranked, judgements, 100);
}
const queryCount = Math.max(dataset.evaluatedQueryIds.length, 1);
const ndcgAt10 = ndcgSum / queryCount;
const recallAt100 = recallSum / queryCount;

const lines = [
  `folder      ${folder}`,
  `docs        ${index.size}`,
  `queries     ${dataset.evaluatedQueryIds.length} evaluated`,
  `settings    k1=0.9 b=0.4 stem=porter title=true`,
  `nDCG@10     ${ndcgAt10.toFixed(4)}`,
  `recall@100  ${recallAt100.toFixed(4)}`,
  `time        ${((performance.now() - startedAt) / 1000).toFixed(1)}s`,
];
if (folder === cranfieldFolder) {
  const matches =
    Math.abs(ndcgAt10 - cranfieldReference.ndcgAt10) <= tolerance &&
    Math.abs(recallAt100 - cranfieldReference.recallAt100) <= tolerance;
  lines.push(
    `reference   nDCG@10 ${cranfieldReference.ndcgAt10} recall@100 ${cranfieldReference.recallAt100}: ${matches ? 'reproduced' : 'NOT reproduced'}`,
  );
  if (!matches) process.exitCode = 1;
}
process.stdout.write(lines.join('\n') + '\n');
