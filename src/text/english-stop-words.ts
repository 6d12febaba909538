/**
 * English stop words dropped before keyword indexing and local embedding.
 *
 * This is exactly the 126-word list of /work/shared/tools/bm25_eval.py, the script that produced
 * the reference BM25 figures (Cranfield nDCG@10 0.3632 with Porter stemming). Changing a word
 * here moves the keyword scores away from that reference, so keep the two lists identical.
 */
export const englishStopWords: ReadonlySet<string> = new Set(
  `
a about above after again against all am an and any are as at be because been
before being below between both but by can could did do does doing down during
each few for from further had has have having he her here hers herself him
himself his how i if in into is it its itself just me more most my myself no
nor not now of off on once only or other our ours ourselves out over own same
she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself
yourselves
`
    .split(/\s+/)
    .filter((word) => word.length > 0),
);
