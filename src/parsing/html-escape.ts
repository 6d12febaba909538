/** Text as HTML source, in element content or a quoted attribute: the HTML parser gives it back as it was. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
