/** What one request to a provider may carry. */
export interface BatchLimits {
  /** Inputs per request (OpenAI 2048, Cohere 96, Voyage 1000). */
  maxInputs: number;
  /** Tokens summed over the inputs of one request, where the provider caps them (OpenAI 300k, Voyage 120k-1M). */
  maxTokens?: number;
}

/**
 * Requests are spread over this many inputs at least: below it, the fixed cost of a request
 * outweighs what running requests side by side saves.
 */
const MIN_INPUTS_PER_REQUEST = 8;
/** Token budgets are estimates (estimateTokens), so requests stay a quarter below the provider's cap. */
const TOKEN_BUDGET_SHARE = 0.75;

/** About four characters a token for English text (OpenAI's and Cohere's rule of thumb); used when a provider reports no usage. */
export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/**
 * Splits `texts` into request-sized ranges `[start, end)` within the provider's limits. With
 * `parallel` > 1, the texts are spread over that many requests when there are enough of them, so
 * that one claimed ingestion batch keeps several requests in flight instead of one large one.
 */
export function planBatches(texts: readonly string[], limits: BatchLimits, parallel: number): Array<[number, number]> {
  const perRequest = Math.min(limits.maxInputs, Math.max(MIN_INPUTS_PER_REQUEST, Math.ceil(texts.length / Math.max(1, parallel))));
  const tokenBudget = limits.maxTokens === undefined ? Number.POSITIVE_INFINITY : limits.maxTokens * TOKEN_BUDGET_SHARE;
  const ranges: Array<[number, number]> = [];
  let start = 0;
  let tokens = 0;
  for (let index = 0; index < texts.length; index++) {
    const cost = estimateTokens(texts[index]!);
    if (index > start && (index - start >= perRequest || tokens + cost > tokenBudget)) {
      ranges.push([start, index]);
      start = index;
      tokens = 0;
    }
    tokens += cost;
  }
  if (start < texts.length) ranges.push([start, texts.length]);
  return ranges;
}
