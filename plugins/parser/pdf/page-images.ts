/**
 * The pictures drawn on a PDF page, as PNG files. pdfjs has no "list images" call: the page's
 * operator list says which image objects are painted (paintImageXObject and its repeat form by
 * object id, inline images with their pixels), and the page's object store holds them decoded
 * (JPEG and JBIG2 included) as raw pixels, which are re-encoded as PNG here.
 *
 * Skipped: image masks (stencils, no colours of their own), pictures under 16 px on a side
 * (bullets, rules, spacers) and repeats of a picture already taken from this document (a logo on
 * every page is one picture).
 */
import { createHash } from 'node:crypto';
import { MIN_PICTURE_SIDE } from '../../../src/parsing/picture-sizes.js';
import { encodePng, type RawImage } from '../../../src/parsing/png-encoder.js';

/** The parts of pdfjs's API used here (pdfjs-dist/legacy/build/pdf.mjs). */
export interface PdfjsImageApi {
  OPS: { paintImageXObject: number; paintImageXObjectRepeat: number; paintInlineImageXObject: number };
  ImageKind: { GRAYSCALE_1BPP: number; RGB_24BPP: number; RGBA_32BPP: number };
}

interface ObjectStore {
  get(objId: string, callback: (data: unknown) => void): unknown;
}

export interface PdfPageWithImages {
  getOperatorList(): Promise<{ fnArray: number[]; argsArray: unknown[][] }>;
  objs: ObjectStore;
  commonObjs: ObjectStore;
}

interface DecodedImage {
  width: number;
  height: number;
  kind: number;
  data?: Uint8Array | Uint8ClampedArray;
}

export interface PageImage {
  data: Buffer;
  width: number;
  height: number;
}

/** An object pdfjs never resolves (it should resolve failures with null) must not hang the parse. */
const OBJECT_WAIT_MS = 10_000;

function waitForObject(store: ObjectStore, objId: string): Promise<unknown> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), OBJECT_WAIT_MS);
    store.get(objId, (data) => {
      clearTimeout(timer);
      resolve(data);
    });
  });
}

function isDecodedImage(value: unknown): value is DecodedImage {
  const image = value as Partial<DecodedImage> | null | undefined;
  return !!image && typeof image.width === 'number' && typeof image.height === 'number' && typeof image.kind === 'number';
}

function rawImage(image: DecodedImage, api: PdfjsImageApi): RawImage | undefined {
  if (!image.data) return undefined;
  const data = new Uint8Array(image.data.buffer, image.data.byteOffset, image.data.byteLength);
  const { width, height } = image;
  if (image.kind === api.ImageKind.GRAYSCALE_1BPP) return { width, height, channels: 1, bitDepth: 1, data };
  if (image.kind === api.ImageKind.RGB_24BPP) return { width, height, channels: 3, bitDepth: 8, data };
  if (image.kind === api.ImageKind.RGBA_32BPP) return { width, height, channels: 4, bitDepth: 8, data };
  return undefined;
}

/** Decoded images painted on the page, in painting order. */
async function paintedImages(page: PdfPageWithImages, api: PdfjsImageApi): Promise<DecodedImage[]> {
  const operators = await page.getOperatorList();
  const images: DecodedImage[] = [];
  for (let index = 0; index < operators.fnArray.length; index++) {
    const operator = operators.fnArray[index];
    const args = operators.argsArray[index] ?? [];
    let image: unknown;
    if (operator === api.OPS.paintInlineImageXObject) image = args[0];
    else if (operator === api.OPS.paintImageXObject || operator === api.OPS.paintImageXObjectRepeat) {
      const objId = String(args[0]);
      // Objects used on several pages live in the document-wide store under a "g_" id.
      image = await waitForObject(objId.startsWith('g_') ? page.commonObjs : page.objs, objId);
    }
    if (isDecodedImage(image)) images.push(image);
  }
  return images;
}

/** The page's pictures as PNG, skipping `seen` ones (fingerprints are added to it). */
export async function extractPageImages(page: PdfPageWithImages, api: PdfjsImageApi, seen: Set<string>): Promise<PageImage[]> {
  const pictures: PageImage[] = [];
  for (const image of await paintedImages(page, api)) {
    // Before decoding, what ingestion would drop anyway (withPictureSizes).
    if (image.width < MIN_PICTURE_SIDE || image.height < MIN_PICTURE_SIDE) continue;
    const raw = rawImage(image, api);
    if (!raw) continue;
    const fingerprint = createHash('sha1').update(`${raw.width}x${raw.height}x${raw.channels}:`).update(raw.data).digest('hex');
    if (seen.has(fingerprint)) continue;
    seen.add(fingerprint);
    pictures.push({ data: encodePng(raw), width: raw.width, height: raw.height });
  }
  return pictures;
}
