/**
 * Which HTML elements are page chrome rather than content, so parsers drop them with everything
 * inside: the text of a menu, a cookie banner or a footer repeated on every page of a site would
 * otherwise be indexed once per page and match every query about "privacy" or "contact".
 */

/** Skipped by tag name: boilerplate and non-text content. */
export const boilerplateTags = new Set(['script', 'style', 'noscript', 'nav', 'header', 'footer', 'aside', 'form', 'svg', 'template', 'iframe', 'object', 'dialog']);

/** ARIA landmark roles of page chrome (the role form of nav, header, footer, aside and a search box). */
const boilerplateRoles = new Set(['navigation', 'banner', 'contentinfo', 'complementary', 'search', 'dialog', 'alertdialog']);

/**
 * Class or id tokens of consent and cookie banners. A bare "cookie" is not enough (a recipe site
 * has `class="cookie-recipe"`): the token must also say banner/notice/consent..., or be one of the
 * consent-management products whose markup is on most commercial sites.
 */
const consentProducts = /cookiebot|onetrust|didomi|usercentrics|truste|quantcast-choice|qc-cmp|cookieyes|osano|iubenda|^cc-(?:window|banner|revoke)$/;
const consentSubject = /cookie|consent|gdpr/;
const consentShape = /banner|notice|bar|popup|modal|dialog|overlay|wall|message|law|policy|container|wrapper|box|alert|consent/;

function isConsentToken(token: string): boolean {
  if (consentProducts.test(token)) return true;
  if (/^(?:cookies?|consent|gdpr)$/.test(token)) return true;
  const subject = consentSubject.exec(token);
  if (!subject) return false;
  // "cookie-consent" and "consent-banner" both qualify; "cookie-recipe" does not.
  const rest = token.slice(0, subject.index) + token.slice(subject.index + subject[0].length);
  return consentShape.test(rest);
}

/** An inline style that hides the element: readers never see its text (templates, tracking, spam). */
const hidingStyle = /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)/i;

/** True when an element's attributes mark it as chrome: a chrome landmark role, hidden, or a consent banner. */
export function isBoilerplateElement(attributes: Record<string, string>): boolean {
  if (boilerplateRoles.has((attributes.role ?? '').trim().toLowerCase())) return true;
  if ('hidden' in attributes || attributes['aria-hidden'] === 'true' || hidingStyle.test(attributes.style ?? '')) return true;
  const names = `${attributes.class ?? ''} ${attributes.id ?? ''}`.toLowerCase().split(/\s+/).filter((token) => token.length > 0);
  return names.some(isConsentToken);
}
