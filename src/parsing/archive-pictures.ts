import type { ResolvedImage } from './html-elements.js';

/**
 * The picture behind an `<img src="<prefix><part name>">` that an office parser wrote for a picture
 * in its zip archive: its bytes when the archive kept them (a portable image type), else only its
 * content type, so the element stays without its bytes.
 */
export function archivePictureResolver(prefix: string, parts: ReadonlyMap<string, Buffer>, typeOf: (partName: string) => string): (src: string) => ResolvedImage | undefined {
  return (src) => {
    if (!src.startsWith(prefix)) return undefined;
    const partName = src.slice(prefix.length);
    const metadata = { content_type: typeOf(partName) };
    const bytes = parts.get(partName);
    return bytes ? { image: { data: bytes, contentType: metadata.content_type }, metadata } : { metadata };
  };
}
