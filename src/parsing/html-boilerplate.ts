/**
 * Which HTML elements are page chrome rather than content, so parsers drop them with everything
 * inside: the text of a menu, a cookie banner or a footer repeated on every page of a site would
 * otherwise be indexed once per page and match every query about "privacy" or "contact".
 */

/** Skipped by tag name: boilerplate and non-text content. */
export const boilerplateTags = new Set(['script', 'style', 'noscript', 'nav', 'header', 'footer', 'aside', 'form', 'svg', 'template', 'iframe', 'object', 'dialog']);

/** ARIA landmark roles of page chrome (the role form of nav, header, footer, aside and a search box). */
const boilerplateRoles = new Set(['navigation', 'banner', 'contentinfo', 'complementary', 'search', 'dialog', 'alertdialog']);

/** An inline style that hides the element: readers never see its text (templates, tracking, spam). */
const hidingStyle = /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)/i;

/** True when an element's attributes mark it as chrome: a chrome landmark role, or hidden. */
export function isBoilerplateElement(attributes: Record<string, string>): boolean {
  if (boilerplateRoles.has((attributes.role ?? '').trim().toLowerCase())) return true;
  return 'hidden' in attributes || attributes['aria-hidden'] === 'true' || hidingStyle.test(attributes.style ?? '');
}

/**
 * The consent-management products whose markup is on most commercial sites (OneTrust, Cookiebot,
 * CookieLawInfo...): their class and id names are banners whatever words they contain. TrustArc's
 * old name `truste` counts only as a whole word: `trustees` is a charity's board.
 */
const consentProducts = /cookiebot|onetrust|optanon|didomi|usercentrics|(?:^|[-_])truste(?:[-_]|$)|quantcast-choice|qc-cmp|cookieyes|cookie-law-info|osano|iubenda|^cc-(?:window|banner|revoke)$/;

/**
 * A class or id names a banner only when it says both what (cookies, consent, GDPR) and a banner's
 * shape: `cookie-policy`, `cookies`, `consent` and `gdpr` are what a cookie policy, a recipe, a
 * medical-consent article or a GDPR explainer call their content. Shapes are whole words, so
 * `cookie-boxes` (a bakery's gift boxes) and `cookie-barbecue` are not a "box" or a "bar".
 */
const consentSubjects = /cookies?|consent|gdpr/g;
const consentSubjectWord = /^(?:cookie|consent|gdpr)s?$/;
const bannerShapes = new Set([
  'banner', 'notice', 'bar', 'popup', 'modal', 'dialog', 'overlay', 'wall', 'message', 'alert', 'prompt', 'toast',
  'window', 'layer', 'container', 'wrapper', 'box',
]);

function isConsentToken(token: string): boolean {
  if (consentProducts.test(token.toLowerCase())) return true;
  // Every class and id of every tag comes here: most name no subject at all.
  if (!/cookie|consent|gdpr/i.test(token)) return false;
  // "cookieBanner", "cookie_banner" and "cookiebanner" alike: camelCase humps and the ends of a
  // subject glued to its neighbour are word boundaries.
  const words = token.replace(/([a-z\d])([A-Z])/g, '$1-$2').toLowerCase().replace(consentSubjects, '-$&-').split(/[^a-z\d]+/);
  const subjects = new Set(words.filter((word) => consentSubjectWord.test(word)).map((word) => word.replace(/s$/, '')));
  if (subjects.size === 0) return false;
  // "cookie-consent" and "gdpr-consent" are what the banner itself is called.
  return subjects.size > 1 || words.some((word) => bannerShapes.has(word));
}

/** Tags that are the page's content itself: a `<main id="cookie-policy">` is the cookie policy, never its banner. */
const contentTags = new Set(['html', 'body', 'main', 'article']);

/**
 * True when an element looks like a cookie or consent banner by its class or id. A guess from names,
 * so html-elements.ts keeps the candidates when dropping them would leave a page with no text.
 */
export function isConsentBanner(name: string, attributes: Record<string, string>): boolean {
  if (contentTags.has(name)) return false;
  const names = `${attributes.class ?? ''} ${attributes.id ?? ''}`.split(/\s+/).filter((token) => token.length > 0);
  return names.some(isConsentToken);
}
