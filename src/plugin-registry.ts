import { cohereEmbeddingPlugin } from '../plugins/embedding/cohere/index.js';
import { localEmbeddingPlugin } from '../plugins/embedding/local/index.js';
import { openAiCompatibleEmbeddingPlugin } from '../plugins/embedding/openai-compatible/index.js';
import { openAiEmbeddingPlugin } from '../plugins/embedding/openai/index.js';
import { voyageEmbeddingPlugin } from '../plugins/embedding/voyage/index.js';
import { builtInParsers } from '../plugins/parser/index.js';
import { cohereRerankerPlugin } from '../plugins/reranker/cohere/index.js';
import { localRerankerPlugin } from '../plugins/reranker/local/index.js';
import { openAiCompatibleRerankerPlugin } from '../plugins/reranker/openai-compatible/index.js';
import { voyageRerankerPlugin } from '../plugins/reranker/voyage/index.js';
import { embeddedVectorStorePlugin } from '../plugins/vector-store/embedded/index.js';
import { pgvectorStorePlugin } from '../plugins/vector-store/pgvector/index.js';
import { BadRequestError } from './errors.js';
import type { Parser, PluginDefinition, PluginDependencies, PluginKind, PluginKinds } from './plugins.js';

/** Every built-in plugin. Adding a provider means one folder under plugins/ and one line here. */
const BUILT_IN: PluginDefinition[] = [
  localEmbeddingPlugin,
  openAiEmbeddingPlugin,
  cohereEmbeddingPlugin,
  voyageEmbeddingPlugin,
  openAiCompatibleEmbeddingPlugin,
  localRerankerPlugin,
  cohereRerankerPlugin,
  voyageRerankerPlugin,
  openAiCompatibleRerankerPlugin,
  ...builtInParsers,
  embeddedVectorStorePlugin,
  pgvectorStorePlugin,
] as PluginDefinition[];

export class PluginRegistry {
  private readonly definitions = new Map<string, PluginDefinition>();

  constructor(definitions: PluginDefinition[] = BUILT_IN) {
    for (const definition of definitions) this.definitions.set(`${definition.kind}/${definition.name}`, definition);
  }

  /** Adds a plugin beside the built-in ones (an embedding application's own, or a test's); the same kind and name replaces. */
  register(definition: PluginDefinition): void {
    this.definitions.set(`${definition.kind}/${definition.name}`, definition);
  }

  list<K extends PluginKind>(kind: K): PluginDefinition<K>[] {
    return [...this.definitions.values()].filter((definition) => definition.kind === kind) as PluginDefinition<K>[];
  }

  has(kind: PluginKind, name: string): boolean {
    return this.definitions.has(`${kind}/${name}`);
  }

  create<K extends PluginKind>(kind: K, name: string, config: PluginKinds[K]['config'], deps: PluginDependencies): PluginKinds[K]['instance'] {
    const definition = this.definitions.get(`${kind}/${name}`) as PluginDefinition<K> | undefined;
    if (!definition) {
      const available = this.list(kind).map((plugin) => plugin.name).join(', ');
      throw new BadRequestError(`Unknown ${kind} plugin "${name}"; available: ${available}`);
    }
    return definition.create(config, deps);
  }

  /** Whether the plugin of that kind and name is the one that ships with the service. */
  isBuiltIn(kind: PluginKind, name: string): boolean {
    const definition = this.definitions.get(`${kind}/${name}`);
    return definition !== undefined && BUILT_IN.includes(definition);
  }

  /** One instance of every parser plugin (parsers are stateless). */
  parsers(): Parser[] {
    return this.list('parser').map((definition) => definition.create({}, {}));
  }
}
