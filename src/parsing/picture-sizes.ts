/**
 * Width and height of every picture a parser returns, and pictures too small to show anything
 * dropped. An e-mail's tracking pixel, a web page's spacer GIF or a document's bullet icon was kept,
 * served with the results of a multimodal collection and sent to the caption model like a diagram.
 * The PDF parser already left out pictures under 16 pixels a side (it measures them as it decodes
 * them); the HTML, Markdown, e-mail and office parsers pass pictures on as their files hold them.
 */
import { imageSize } from 'image-size';
import type { DocumentElement } from '../plugins.js';

/** A picture narrower or lower than this shows nothing a reader or a caption model could use. */
export const MIN_PICTURE_SIDE = 16;

interface PictureSize {
  width: number;
  height: number;
}

/** A width or height in pixels: a positive integer. */
export function isPixelCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/**
 * As shown: a JPEG whose EXIF turns it a quarter (orientations 5-8) is shown with its sides swapped.
 * Undefined for bytes image-size cannot read (an unknown or damaged format).
 */
function measuredSize(data: Buffer): PictureSize | undefined {
  try {
    const { width, height, orientation } = imageSize(data);
    if (!isPixelCount(width) || !isPixelCount(height)) return undefined;
    return orientation !== undefined && orientation >= 5 ? { width: height, height: width } : { width, height };
  } catch {
    return undefined;
  }
}

function sizeOf(element: DocumentElement): PictureSize | undefined {
  const { width, height } = element.metadata ?? {};
  if (isPixelCount(width) && isPixelCount(height)) return { width, height };
  return element.image ? measuredSize(element.image.data) : undefined;
}

/**
 * The elements with `width` and `height` in the metadata of each picture whose size can be read. A
 * picture under MIN_PICTURE_SIDE loses its bytes, and its element goes too unless it has text (alt
 * text, a file name), which stays searchable.
 */
export function withPictureSizes(elements: DocumentElement[]): DocumentElement[] {
  if (!elements.some((element) => element.image)) return elements;
  const kept: DocumentElement[] = [];
  for (const element of elements) {
    const size = element.image ? sizeOf(element) : undefined;
    if (!size) {
      kept.push(element);
      continue;
    }
    const measured: DocumentElement = { ...element, metadata: { ...element.metadata, width: size.width, height: size.height } };
    if (size.width >= MIN_PICTURE_SIDE && size.height >= MIN_PICTURE_SIDE) {
      kept.push(measured);
    } else if (element.text.trim() !== '') {
      const { image: _tooSmall, ...textOnly } = measured;
      kept.push(textOnly);
    }
  }
  return kept;
}
