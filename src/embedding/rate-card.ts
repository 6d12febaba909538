/**
 * List prices of hosted embedding models in US dollars per million input tokens, as the providers
 * published them (OpenAI, Cohere and Voyage pricing pages, 2026). Cost figures in stats and the
 * usage report are estimates from this fixed card: discounts, free tiers and later price changes
 * are not known here. Self-hosted servers (`openai_compatible`), `local` and any model not on the
 * card cost 0 (spec 2.9).
 */
const RATE_CARD: Record<string, Record<string, number>> = {
  openai: {
    'text-embedding-3-small': 0.02,
    'text-embedding-3-large': 0.13,
    'text-embedding-ada-002': 0.10,
  },
  cohere: {
    'embed-english-v3.0': 0.10,
    'embed-multilingual-v3.0': 0.10,
    'embed-english-light-v3.0': 0.10,
    'embed-multilingual-light-v3.0': 0.10,
    'embed-v4.0': 0.12,
  },
  voyage: {
    'voyage-3.5': 0.06,
    'voyage-3.5-lite': 0.02,
    'voyage-3-large': 0.18,
    'voyage-code-3': 0.18,
    'voyage-4': 0.06,
    'voyage-4-lite': 0.02,
    'voyage-4-large': 0.12,
  },
};

export function pricePerMillionTokens(provider: string, model: string): number {
  return RATE_CARD[provider]?.[model] ?? 0;
}

/** Estimated cost in US dollars, rounded to a millionth of a dollar. */
export function embeddingCostUsd(provider: string, model: string, tokens: number): number {
  return Math.round(pricePerMillionTokens(provider, model) * tokens) / 1e6;
}
