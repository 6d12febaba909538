import type { Config } from '../config.js';
import { storableText } from '../db/storable-values.js';
import type { PluginRegistry } from '../plugin-registry.js';
import type { LanguageModel } from '../plugins.js';

export type CaptionStatus = 'captioned' | 'skipped' | 'failed';

export interface CaptionOutcome {
  caption: string | null;
  status: CaptionStatus;
  /** Why there is no caption (`skipped` or `failed`). */
  error: string | null;
}

const PROMPT = 'Describe this image for a search index in one or two sentences: what it shows, and any text, labels or numbers in it.';
const MAX_CAPTION_TOKENS = 200;

/**
 * Captions image elements through the `llm` plugin contract with the model named by CAPTION_LLM.
 * Without one that reads images (the default), every image records why it was not captioned.
 * The model is resolved on first use, so a plugin registered after start-up is found.
 */
export class ImageCaptioner {
  private model: LanguageModel | undefined;

  constructor(private readonly plugins: PluginRegistry, private readonly config: Config['captionLlm']) {}

  /** The model, or the reason there is none that can caption. */
  private resolve(): LanguageModel | string {
    if (!this.config) return 'no vision-capable model configured (set CAPTION_LLM to an llm plugin that reads images)';
    if (!this.plugins.has('llm', this.config.plugin)) return `CAPTION_LLM names "${this.config.plugin}", which is not an installed llm plugin`;
    this.model ??= this.plugins.create('llm', this.config.plugin, { model: this.config.model, apiKey: this.config.apiKey, baseUrl: this.config.baseUrl }, {});
    if (!this.model.vision) return `the llm plugin "${this.config.plugin}" does not read images`;
    return this.model;
  }

  async caption(image: { data: Buffer; contentType: string }): Promise<CaptionOutcome> {
    const model = this.resolve();
    if (typeof model === 'string') return { caption: null, status: 'skipped', error: model };
    try {
      // A model's words reach text and jsonb columns after parsing, past storableParsedDocument.
      const text = storableText((await model.complete([{ role: 'user', content: PROMPT, images: [image] }], { maxTokens: MAX_CAPTION_TOKENS })).trim());
      return text ? { caption: text, status: 'captioned', error: null } : { caption: null, status: 'failed', error: 'the model returned an empty caption' };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // The cut may fall between the halves of a surrogate pair, which jsonb refuses.
      return { caption: null, status: 'failed', error: storableText(message.slice(0, 500)) };
    }
  }
}
