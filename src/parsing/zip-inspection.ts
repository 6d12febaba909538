/**
 * Safety checks on a zip container (DOCX and the other OOXML formats) before a library inflates
 * it: a few kilobytes of deflate can expand to gigabytes (a "zip bomb"), and mammoth/JSZip trust
 * the archive and hold every entry they read in memory.
 *
 * Two steps, both in memory (nothing is extracted to disk):
 * 1. The central directory is read with yauzl and the declared sizes are judged before anything
 *    is decompressed: too many entries, too much in all, or a large entry (or archive) that
 *    expands more than `maxCompressionRatio` times is refused.
 * 2. The declared sizes can lie, so every entry is then inflated once into a counter, with
 *    yauzl's `validateEntrySizes`: an entry that produces more bytes than it declared fails at
 *    that point, so the work stays bounded by the sizes step 1 accepted. Small entries the caller
 *    asks for (e.g. docProps/core.xml) are kept on the way.
 */
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { DocumentParseError, reasonOf } from './document-parse-error.js';

export interface ZipLimits {
  /** Refused above this many entries. */
  maxEntries: number;
  /** Refused above this many bytes once inflated, whatever the ratio. */
  maxTotalBytes: number;
  /** Entries (or archives) larger than this once inflated... */
  ratioCheckAboveBytes: number;
  /** ...are refused when they inflate more than this many times. */
  maxCompressionRatio: number;
}

/** Limits for office documents: a real DOCX rarely inflates past 10× (text XML) and its pictures barely compress. */
export const officeDocumentLimits: ZipLimits = {
  maxEntries: 10_000,
  maxTotalBytes: 512 * 1024 * 1024,
  ratioCheckAboveBytes: 50 * 1024 * 1024,
  maxCompressionRatio: 100,
};

const megabytes = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MB`;

interface DeclaredEntry {
  name: string;
  compressedSize: number;
  uncompressedSize: number;
}

/** Step 1: why the declared sizes make this archive a bomb, or undefined when they are acceptable. */
export function declaredSizeProblem(entries: readonly DeclaredEntry[], limits: ZipLimits): string | undefined {
  if (entries.length > limits.maxEntries) return `${entries.length} entries (limit ${limits.maxEntries})`;
  let totalCompressed = 0;
  let totalUncompressed = 0;
  for (const entry of entries) {
    totalCompressed += entry.compressedSize;
    totalUncompressed += entry.uncompressedSize;
    const ratio = entry.uncompressedSize / Math.max(entry.compressedSize, 1);
    if (entry.uncompressedSize > limits.ratioCheckAboveBytes && ratio > limits.maxCompressionRatio) {
      return `${entry.name} would inflate ${Math.round(ratio)}× to ${megabytes(entry.uncompressedSize)} (limit ${limits.maxCompressionRatio}× above ${megabytes(limits.ratioCheckAboveBytes)})`;
    }
  }
  if (totalUncompressed > limits.maxTotalBytes) return `its entries would inflate to ${megabytes(totalUncompressed)} (limit ${megabytes(limits.maxTotalBytes)})`;
  const ratio = totalUncompressed / Math.max(totalCompressed, 1);
  if (totalUncompressed > limits.ratioCheckAboveBytes && ratio > limits.maxCompressionRatio) {
    return `it would inflate ${Math.round(ratio)}× to ${megabytes(totalUncompressed)} (limit ${limits.maxCompressionRatio}× above ${megabytes(limits.ratioCheckAboveBytes)})`;
  }
  return undefined;
}

async function readCentralDirectory(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  const entries: yauzl.Entry[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      entries.push(entry);
      zip.readEntry();
    });
    zip.once('end', () => resolve());
    zip.once('error', reject);
    zip.readEntry();
  });
  return entries;
}

/** Inflates an entry, counting its bytes; keeps them when `keep` is set. */
async function inflateEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, keep: boolean): Promise<Buffer | undefined> {
  const kept: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (keep) kept.push(chunk);
      callback();
    },
  });
  await pipeline(await zip.openReadStreamPromise(entry), sink);
  return keep ? Buffer.concat(kept) : undefined;
}

/**
 * Checks the archive (both steps above) and returns the entries `keep` asks for, by name. Throws a
 * DocumentParseError naming `format` ("DOCX zip container: ...").
 */
export async function inspectZipArchive(data: Buffer, format: string, limits: ZipLimits, keep: (name: string) => boolean = () => false): Promise<Map<string, Buffer>> {
  const stage = `${format} zip container`;
  let zip: yauzl.ZipFile;
  let entries: yauzl.Entry[];
  try {
    zip = await yauzl.fromBufferPromise(data, { lazyEntries: true, validateEntrySizes: true, strictFileNames: false });
    entries = await readCentralDirectory(zip);
  } catch (error) {
    throw new DocumentParseError(stage, `the archive is truncated or damaged (${reasonOf(error)})`);
  }
  const problem = declaredSizeProblem(
    entries.map((entry) => ({ name: entry.fileName, compressedSize: entry.compressedSize, uncompressedSize: entry.uncompressedSize })),
    limits,
  );
  if (problem) throw new DocumentParseError(stage, `refused before decompression as a likely zip bomb: ${problem}`);
  const kept = new Map<string, Buffer>();
  for (const entry of entries) {
    if (entry.fileName.endsWith('/')) continue;
    try {
      const bytes = await inflateEntry(zip, entry, keep(entry.fileName));
      if (bytes) kept.set(entry.fileName, bytes);
    } catch (error) {
      const reason = reasonOf(error);
      // yauzl's validateEntrySizes: the entry inflates past the size its header declared.
      const lied = /too many bytes/i.test(reason);
      throw new DocumentParseError(stage, lied
        ? `refused as a likely zip bomb: ${entry.fileName} inflates past its declared ${entry.uncompressedSize} bytes`
        : `${entry.fileName} cannot be read (${reason})`);
    }
  }
  return kept;
}
