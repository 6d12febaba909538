/**
 * Raw pixels → a PNG file (RFC 2083): signature, IHDR, one IDAT of zlib-deflated scanlines with
 * filter type 0, IEND. pdfjs hands out decoded pixels, not image files, and the service stores
 * pictures in a format every client and vision model reads; no image library is a dependency
 * (sharp and pngjs would be one each for these ~40 lines over node:zlib).
 */
import { crc32, deflateSync } from 'node:zlib';

export interface RawImage {
  width: number;
  height: number;
  /** 1: grey, 3: RGB, 4: RGBA. */
  channels: 1 | 3 | 4;
  /** 1 (packed rows, a set bit is white, as in PNG) or 8. Only grey images use 1. */
  bitDepth: 1 | 8;
  data: Uint8Array;
}

const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const colourType: Record<RawImage['channels'], number> = { 1: 0, 3: 2, 4: 6 };

function pngChunk(type: string, body: Buffer): Buffer {
  const typeAndBody = Buffer.concat([Buffer.from(type, 'latin1'), body]);
  const chunk = Buffer.alloc(typeAndBody.length + 8);
  chunk.writeUInt32BE(body.length, 0);
  typeAndBody.copy(chunk, 4);
  chunk.writeUInt32BE(crc32(typeAndBody), typeAndBody.length + 4);
  return chunk;
}

export function encodePng(image: RawImage): Buffer {
  const { width, height, channels, bitDepth, data } = image;
  const rowBytes = Math.ceil((width * channels * bitDepth) / 8);
  if (data.length < rowBytes * height) throw new RangeError(`${data.length} bytes cannot hold a ${width}×${height} image of ${channels} channel(s)`);
  // Each scanline starts with its filter type byte (0: none).
  const scanlines = Buffer.alloc((rowBytes + 1) * height);
  for (let row = 0; row < height; row++) {
    scanlines.set(data.subarray(row * rowBytes, (row + 1) * rowBytes), row * (rowBytes + 1) + 1);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = bitDepth;
  header[9] = colourType[channels];
  return Buffer.concat([signature, pngChunk('IHDR', header), pngChunk('IDAT', deflateSync(scanlines)), pngChunk('IEND', Buffer.alloc(0))]);
}
