/** The parsers that ship with the service, in the order the registry offers them. */
import type { PluginDefinition } from '../../src/plugins.js';
import { csvParserPlugin } from './csv/index.js';
import { docxParserPlugin } from './docx/index.js';
import { emailParserPlugin } from './email/index.js';
import { htmlParserPlugin } from './html/index.js';
import { jsonParserPlugin } from './json/index.js';
import { markdownParserPlugin } from './markdown/index.js';
import { odpParserPlugin } from './odp/index.js';
import { odsParserPlugin } from './ods/index.js';
import { odtParserPlugin } from './odt/index.js';
import { pdfParserPlugin } from './pdf/index.js';
import { pptxParserPlugin } from './pptx/index.js';
import { textParserPlugin } from './text/index.js';
import { xlsxParserPlugin } from './xlsx/index.js';

export const builtInParsers: ReadonlyArray<PluginDefinition<'parser'>> = [
  textParserPlugin, markdownParserPlugin, htmlParserPlugin, pdfParserPlugin, docxParserPlugin, odtParserPlugin, pptxParserPlugin, odpParserPlugin, xlsxParserPlugin, odsParserPlugin, csvParserPlugin, jsonParserPlugin, emailParserPlugin,
];
