/**
 * Picture formats browsers and vision models read. A document's pictures in other formats (EMF,
 * WMF, TIFF) keep their `image` element, with its alt text, but not their bytes.
 */
export const PORTABLE_IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
