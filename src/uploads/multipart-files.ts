import type { MultipartFile, MultipartValue } from '@fastify/multipart';
import type { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { discardUpload, storeUpload, type StoredUpload } from '../documents/documents.service.js';
import { AppError, BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../errors.js';
import { inspectUpload } from '../ingestion/parser-selection.js';
import type { Parser } from '../plugins.js';
import type { FileStore } from '../storage/file-store.js';
import { MultipartFingerprint } from './multipart-fingerprint.js';

/** The largest multipart field (`metadata`, `on_duplicate`) a request may send: 1 MiB. */
export const MULTIPART_FIELD_MAX_BYTES = 1024 * 1024;
/** The most files one request may carry (a batch, or one PUT to an upload session); one more is a 413. */
export const MULTIPART_MAX_FILES = 1000;
/** The most non-file fields one request may carry; the upload routes read two (`metadata`, `on_duplicate`). */
export const MULTIPART_MAX_FIELDS = 100;
/** The most parts one request may carry: files and fields reach their own limits first. */
export const MULTIPART_MAX_PARTS = 2000;
/**
 * The longest boundary busboy can search for: it looks for `\r\n--` + boundary with a search of at
 * most 256 bytes. RFC 2046 allows 70 characters, so only a broken client sends more.
 */
const MULTIPART_BOUNDARY_MAX_BYTES = 256 - 4;

/** The limits @fastify/multipart enforces (registered in app.ts); `multipartFailure` words them. */
export function multipartLimits(fileSizeBytes: number) {
  return { fileSize: fileSizeBytes, files: MULTIPART_MAX_FILES, fields: MULTIPART_MAX_FIELDS, fieldSize: MULTIPART_FIELD_MAX_BYTES, parts: MULTIPART_MAX_PARTS };
}

/** A file part streamed to storage; `filename` is the sanitised display name. */
export interface ReceivedFile {
  filename: string;
  contentType: string;
  upload: StoredUpload;
}

/** A file part that was not stored, with the error (status and detail) a client sees. */
export interface RefusedFile {
  filename: string;
  refusal: AppError;
}

export type FileOutcome = ReceivedFile | RefusedFile;

export function isRefused(outcome: FileOutcome): outcome is RefusedFile {
  return 'refusal' in outcome;
}

export interface ReceiveOptions {
  files: FileStore;
  parsers: readonly Parser[];
  collectionId: string;
  limitBytes: number;
  /**
   * `collect`: a refused file becomes an outcome and the other files go on (batch upload).
   * `throw`: the first refusal fails the request and removes what it stored (single upload,
   * upload-session files), so a refused request leaves nothing behind.
   */
  refusals: 'collect' | 'throw';
  /** Files up to this size stay in memory, to be written with their document rows; 0 for upload sessions, which keep files until completed. */
  inlineMaxBytes: number;
  /** At most this many files; one more is a 400 (the single upload takes exactly one). */
  maxFiles?: number;
  /** The 400 for a file in another part or one file too many. */
  partRule: string;
}

export interface ReceivedMultipart {
  outcomes: FileOutcome[];
  fields: Record<string, string>;
}

const maxFilenameLength = 1024;

/**
 * The name a client gave its file, kept only as a label: the last path segment (a client path such
 * as `../../etc/passwd` becomes `passwd`), without control characters, at most 1,024 characters,
 * cut before its extension so that the extension, which the parser is chosen by, stays.
 * Storage keys are made by the service and never derive from it.
 */
export function displayFilename(raw: string | undefined): string {
  const base = (raw ?? '').split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  const name = base === '.' || base === '..' ? '' : base;
  if (name.length <= maxFilenameLength) return name || 'upload';
  const extension = /\.[A-Za-z0-9]{1,16}$/.exec(name)?.[0] ?? '';
  let end = maxFilenameLength - extension.length;
  // Not between the halves of a surrogate pair (an emoji): half of one is no character, and jsonb refuses it.
  if (isHighSurrogate(name.charCodeAt(end - 1))) end -= 1;
  return name.slice(0, end) + extension;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * Streams one file part to storage (or keeps a small one in memory for the database), or says why
 * it is refused: judged by its first bytes and name before anything is stored (unsupported type
 * 415, empty 400), then over the size limit (413).
 */
async function receiveFile(part: MultipartFile, stream: Readable, options: ReceiveOptions): Promise<FileOutcome> {
  const filename = displayFilename(part.filename);
  let inspected;
  try {
    inspected = await inspectUpload(options.parsers, { filename, contentType: part.mimetype, stream });
  } catch (error) {
    if (error instanceof AppError) return { filename, refusal: error };
    throw error;
  }
  try {
    const upload = await storeUpload(options.files, options.collectionId, inspected.content, {
      isTruncated: () => part.file.truncated, limitBytes: options.limitBytes, inlineMaxBytes: options.inlineMaxBytes,
    });
    return { filename, contentType: inspected.choice.contentType, upload };
  } catch (error) {
    if (error instanceof PayloadTooLargeError) return { filename, refusal: new PayloadTooLargeError(`${filename}: ${error.message}`) };
    throw error;
  }
}

/**
 * Bytes of small files one request may hold in memory until its documents are created; the files
 * after them go to the file store. Without it a batch of 1,000 files of 60 KB would hold 60 MB,
 * and send it to the database in one statement.
 */
const INLINE_BYTES_PER_REQUEST = 8 * 1024 * 1024;

/**
 * Fields read as such though their part has a filename: `curl -F metadata=@meta.json` and a Blob
 * appended to a FormData send them that way, and were refused as a second file.
 */
const FIELDS_SENT_AS_FILES = new Set(['metadata', 'on_duplicate']);

async function readFileAsField(fieldname: string, stream: Readable): Promise<string> {
  const pieces: Buffer[] = [];
  let bytes = 0;
  for await (const piece of stream as AsyncIterable<Buffer>) {
    bytes += piece.length;
    if (bytes > MULTIPART_FIELD_MAX_BYTES) throw new PayloadTooLargeError(`Field "${fieldname}" is larger than ${MULTIPART_FIELD_MAX_BYTES} bytes`);
    pieces.push(piece);
  }
  return Buffer.concat(pieces).toString('utf8');
}

/** A field's value as a string: a part sent as `Content-Type: application/json` arrives parsed (String() of it was "[object Object]"). */
function fieldValue(part: MultipartValue): string {
  return typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
}

/** A field sent twice (two `metadata` parts) is a 400: the last one won, unseen. */
function assertFirstOfItsName(fields: Record<string, string>, name: string): void {
  if (Object.hasOwn(fields, name)) throw new BadRequestError(`Field "${name}" is sent twice: send it once`);
}

/** The file part's stream to read, through the request's fingerprint when it keeps one. */
function fileStream(part: MultipartFile, fingerprint: MultipartFingerprint | null): Readable {
  return fingerprint ? fingerprint.addFile(part.fieldname, part.filename, part.mimetype, part.file) : part.file;
}

/**
 * Reads a multipart body part by part: each `file` part streams to storage as it arrives (never
 * held whole in memory; small files are kept for the database, within INLINE_BYTES_PER_REQUEST),
 * other fields are collected as strings. On any failure, files this request stored are removed.
 * The request's `multipartFingerprint`, when the Idempotency-Key layer set one, sees every part.
 */
export async function receiveMultipartFiles(request: FastifyRequest, options: ReceiveOptions): Promise<ReceivedMultipart> {
  if (!request.isMultipart()) throw new UnsupportedMediaTypeError(`Upload as multipart/form-data: ${options.partRule}`);
  const outcomes: FileOutcome[] = [];
  const fields: Record<string, string> = {};
  let inlineBytesLeft = INLINE_BYTES_PER_REQUEST;
  const fingerprint = request.multipartFingerprint;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        // busboy cuts a longer field and says so: parsing the rest would report bad JSON, not the size.
        if (part.valueTruncated) throw new PayloadTooLargeError(`Field "${part.fieldname}" is larger than ${MULTIPART_FIELD_MAX_BYTES} bytes`);
        assertFirstOfItsName(fields, part.fieldname);
        fields[part.fieldname] = fieldValue(part);
        fingerprint?.addField(part.fieldname, fields[part.fieldname]!);
        continue;
      }
      const filePart = part as MultipartFile;
      if (FIELDS_SENT_AS_FILES.has(filePart.fieldname)) {
        assertFirstOfItsName(fields, filePart.fieldname);
        fields[filePart.fieldname] = await readFileAsField(filePart.fieldname, fileStream(filePart, fingerprint));
        continue;
      }
      if (filePart.fieldname !== 'file' || outcomes.length === (options.maxFiles ?? Infinity)) {
        filePart.file.resume();
        throw new BadRequestError(options.partRule);
      }
      const stream = fileStream(filePart, fingerprint);
      const outcome = await receiveFile(filePart, stream, { ...options, inlineMaxBytes: Math.min(options.inlineMaxBytes, inlineBytesLeft) });
      if (!isRefused(outcome)) inlineBytesLeft -= outcome.upload.content?.length ?? 0;
      outcomes.push(outcome);
      if (isRefused(outcome) && options.refusals === 'throw') throw outcome.refusal;
    }
    fingerprint?.markComplete();
  } catch (error) {
    await removeReceived(options.files, outcomes);
    throw multipartFailure(error) ?? error;
  }
  return { outcomes, fields };
}

/**
 * The fingerprint of a multipart body, read to its end and dropped, as `receiveMultipartFiles`
 * takes it: what an Idempotency-Key replay compares with the first request's. A body cut by a limit
 * is read as far as busboy goes, so it differs from any body that was read whole.
 */
export async function fingerprintMultipartBody(request: FastifyRequest): Promise<string | null> {
  const fingerprint = new MultipartFingerprint();
  for await (const part of request.parts()) {
    if (part.type === 'field') fingerprint.addField(part.fieldname, fieldValue(part));
    else fileStream(part as MultipartFile, fingerprint).resume();
  }
  fingerprint.markComplete();
  return fingerprint.digest();
}

/**
 * busboy cannot start on a content type without a usable boundary and says so with a plain Error
 * (no code): these were 500s. Matched by message, as the errors carry nothing else.
 */
const BUSBOY_CONTENT_TYPE_ERRORS: Array<[RegExp, () => AppError]> = [
  [/^Multipart: Boundary not found$/, () => new BadRequestError('multipart/form-data needs a boundary parameter: Content-Type: multipart/form-data; boundary=<a string that is not in the body>')],
  [/^The needle cannot have a length bigger than/, () => new BadRequestError(`The multipart boundary is longer than ${MULTIPART_BOUNDARY_MAX_BYTES} bytes (RFC 2046 allows 70 characters)`)],
];

/**
 * The client's error for what @fastify/multipart or busboy refused, stating the limit it hit in
 * words ("reach files limit" named none); undefined for any other failure.
 */
function multipartFailure(error: unknown): AppError | undefined {
  if (!(error instanceof Error)) return undefined;
  switch ((error as { code?: unknown }).code) {
    case 'FST_FILES_LIMIT':
      return new PayloadTooLargeError(`A request takes at most ${MULTIPART_MAX_FILES} files: send the rest in another request`);
    case 'FST_FIELDS_LIMIT':
      return new PayloadTooLargeError(`A request takes at most ${MULTIPART_MAX_FIELDS} fields besides its files`);
    case 'FST_INVALID_JSON_FIELD_ERROR':
      // A part sent as application/json that does not parse, or that busboy cut at the field limit.
      return new BadRequestError(`A field sent as application/json is not valid JSON or is larger than ${MULTIPART_FIELD_MAX_BYTES} bytes`);
    case undefined:
      return BUSBOY_CONTENT_TYPE_ERRORS.find(([message]) => message.test(error.message))?.[1]();
    default:
      return undefined;
  }
}

/** Removes the stored files of received outcomes (a request that failed after storing some). */
export async function removeReceived(files: FileStore, outcomes: FileOutcome[]): Promise<void> {
  for (const outcome of outcomes) if (!isRefused(outcome)) await discardUpload(files, outcome.upload);
}
