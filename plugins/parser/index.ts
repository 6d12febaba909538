/** The parsers that ship with the service, in the order the registry offers them. */
import type { PluginDefinition } from '../../src/plugins.js';
import { htmlParserPlugin } from './html/index.js';
import { markdownParserPlugin } from './markdown/index.js';
import { textParserPlugin } from './text/index.js';

export const builtInParsers: ReadonlyArray<PluginDefinition<'parser'>> = [textParserPlugin, markdownParserPlugin, htmlParserPlugin];
