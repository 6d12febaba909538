import { localEmbeddingPlugin } from '../plugins/embedding/local/index.js';
import { builtInParsers } from '../plugins/parser/index.js';
import { embeddedVectorStorePlugin } from '../plugins/vector-store/embedded/index.js';
import { pgvectorStorePlugin } from '../plugins/vector-store/pgvector/index.js';
import { BadRequestError } from './errors.js';
import type { Parser, PluginDefinition, PluginDependencies, PluginKind, PluginKinds } from './plugins.js';

/** Every built-in plugin. Adding a provider means one folder under plugins/ and one line here. */
const BUILT_IN: PluginDefinition[] = [
  localEmbeddingPlugin,
  ...builtInParsers,
  embeddedVectorStorePlugin,
  pgvectorStorePlugin,
] as PluginDefinition[];

export class PluginRegistry {
  private readonly definitions = new Map<string, PluginDefinition>();

  constructor(definitions: PluginDefinition[] = BUILT_IN) {
    for (const definition of definitions) this.definitions.set(`${definition.kind}/${definition.name}`, definition);
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

  /** One instance of every parser plugin (parsers are stateless). */
  parsers(): Parser[] {
    return this.list('parser').map((definition) => definition.create({}, {}));
  }
}
