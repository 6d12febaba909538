/**
 * The `email` parser: saved messages (.eml, message/rfc822) through postal-mime, which decodes
 * MIME parts, transfer encodings, character sets and encoded headers. A message becomes its
 * subject (a heading), a paragraph of its From, To, Cc and Date lines (so "the mail from Ada about
 * berths" finds it by keyword), then its body: the plain-text part when there is one (HTML mail
 * is mostly layout; its plain-text part is the same words), else the HTML part read as a web page.
 * Attachments follow, each read by the parser its content and name choose
 * (src/ingestion/attached-files.ts); pictures the HTML body shows inline are not attachments.
 *
 * Source metadata: `author` (the sender), `created_at` (the Date header), `to`, `cc`,
 * `message_id`, `in_reply_to` and `attachments`.
 */
import PostalMime, { type Address } from 'postal-mime';
import type { DocumentElement, ParsedDocument, Parser, ParserInput, PluginDefinition } from '../../../src/plugins.js';
import { DocumentParseError, reasonOf } from '../../../src/parsing/document-parse-error.js';
import { collapseWhitespace, documentPropertyMetadata } from '../../../src/parsing/document-properties.js';
import { htmlToElements } from '../../../src/parsing/html-elements.js';
import { parsePlainText } from '../text/index.js';

/** `Ada Lovelace <ada@example.com>`, a bare address, or a group's members. */
function addressTexts(addresses: Address[] | Address | undefined): string[] {
  const list = addresses === undefined ? [] : Array.isArray(addresses) ? addresses : [addresses];
  return list.flatMap((address) => (address.group ? address.group : [address]))
    .map((mailbox) => (mailbox.name ? `${mailbox.name} <${mailbox.address}>` : mailbox.address ?? ''))
    .filter((text) => text.length > 0);
}

async function parseEmail(data: Buffer): Promise<ParsedDocument> {
  let email: Awaited<ReturnType<typeof PostalMime.parse>>;
  try {
    email = await PostalMime.parse(data, { attachmentEncoding: 'arraybuffer' });
  } catch (error) {
    throw new DocumentParseError('email message', reasonOf(error));
  }
  const subject = collapseWhitespace(email.subject ?? '');
  const from = addressTexts(email.from);
  const to = addressTexts(email.to);
  const cc = addressTexts(email.cc);
  const sent = email.date === undefined ? null : new Date(email.date);
  const headingPath = subject.length > 0 ? [subject] : [];
  const headerLines = [
    from.length > 0 ? `From: ${from.join(', ')}` : '',
    to.length > 0 ? `To: ${to.join(', ')}` : '',
    cc.length > 0 ? `Cc: ${cc.join(', ')}` : '',
    email.date !== undefined ? `Date: ${email.date}` : '',
  ].filter((line) => line.length > 0);

  const text = email.text?.trim() ?? '';
  const body = text.length > 0 ? parsePlainText(text).elements : htmlToElements(email.html ?? '').elements;
  const elements: DocumentElement[] = [
    ...(subject.length > 0 ? [{ type: 'heading' as const, level: 1, text: subject, headingPath: [] }] : []),
    ...(headerLines.length > 0 ? [{ type: 'paragraph' as const, text: headerLines.join('\n'), headingPath }] : []),
    ...body.map((element) => ({ ...element, headingPath: [...headingPath, ...element.headingPath] })),
  ];
  const attached = email.attachments
    .filter((attachment) => !attachment.related)
    .map((attachment, index) => ({
      filename: attachment.filename ?? `attachment ${index + 1}`,
      contentType: attachment.mimeType,
      // An ArrayBuffer: the attachmentEncoding PostalMime.parse was given.
      data: Buffer.from(attachment.content as ArrayBuffer),
    }));
  const attachments = attached.map((attachment) => attachment.filename);
  const metadata = {
    ...documentPropertyMetadata({ author: from[0], created: sent }),
    ...(to.length > 0 ? { to } : {}),
    ...(cc.length > 0 ? { cc } : {}),
    ...(email.messageId ? { message_id: email.messageId } : {}),
    ...(email.inReplyTo ? { in_reply_to: email.inReplyTo } : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
  };
  return { elements, ...(subject.length > 0 ? { title: subject } : {}), metadata, ...(attached.length > 0 ? { attachments: attached } : {}) };
}

const emailParser: Parser = {
  name: 'email',
  contentTypes: ['message/rfc822'],
  extensions: ['eml'],
  parse(input: ParserInput): Promise<ParsedDocument> {
    return parseEmail(input.data);
  },
};

export const emailParserPlugin: PluginDefinition<'parser'> = {
  kind: 'parser',
  name: 'email',
  description: 'Email messages (.eml) via postal-mime: subject, sender, recipients and date, then the plain-text body (else the HTML one), then the attachments, each read by its own parser',
  create: () => emailParser,
};
