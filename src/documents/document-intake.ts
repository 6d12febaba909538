import type { CollectionRecord, DocumentRecord } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';
import type { JobQueue } from '../ingestion/job-queue.js';
import { createDocuments, discardUpload, documentFromRow, serializeDocument, type DocumentRow, type NewDocumentInput } from './documents.service.js';
import { removalRuntime, removeDocuments, type RemovalRuntime } from './document-removal.js';
import { checkMetadata, parseMetadataField } from './metadata-rules.js';
import type { WriteLocks } from '../concurrency/keyed-serializer.js';

/**
 * What an upload does when a document with the same content (SHA-256) already exists in the
 * collection, for the same tenant:
 * - `skip` (the default): nothing new is stored; the answer is the existing document. Uploading the
 *   same file twice, or retrying an upload, never doubles its chunks in search results.
 * - `replace`: the existing copies are deleted (chunks, vectors, files) and the new one is ingested,
 *   with the new metadata.
 * - `keep`: both are kept.
 * A failed copy does not count for `skip` (the new upload is the retry); `replace` deletes it too.
 */
export const ON_DUPLICATE = ['skip', 'replace', 'keep'] as const;
export type OnDuplicate = (typeof ON_DUPLICATE)[number];

export interface IntakeRuntime extends RemovalRuntime {
  jobs: JobQueue;
  writeLocks: WriteLocks;
}

export function intakeRuntime(services: Parameters<typeof removalRuntime>[0] & { jobs: JobQueue; writeLocks: WriteLocks }): IntakeRuntime {
  return { ...removalRuntime(services), jobs: services.jobs, writeLocks: services.writeLocks };
}

export interface AdmittedFile {
  document: DocumentRecord;
  /** True when `document` is an existing copy and the upload stored nothing new. */
  duplicate: boolean;
  /** Documents `replace` deleted for this file. */
  replacedDocumentIds: string[];
}

export interface IntakeOptions {
  metadata: Record<string, unknown>;
  onDuplicate: OnDuplicate;
  batchId: string | null;
}

/** Documents of the same content and tenant (as text: the number 5 and the string "5" are one tenant). */
async function existingCopies(runtime: IntakeRuntime, collection: CollectionRecord, hashes: string[], tenant: string | null): Promise<DocumentRecord[]> {
  const rows = await runtime.sql<DocumentRow>(
    'select * from documents where collection_id = ? and sha256 = any(?::text[]) and tenant is not distinct from ? order by created_at, id',
    [collection.id, [...new Set(hashes)], tenant],
  );
  return rows.map(documentFromRow);
}

/**
 * Turns stored files into documents: checks the metadata (400 before anything is created), applies
 * `on_duplicate`, then creates the new documents and their jobs in one statement. Files of the same
 * content within one request count as duplicates of the first one (except with `keep`). The caller
 * removes the stored files if this throws; files found to be duplicates are removed here.
 */
export async function admitFiles(runtime: IntakeRuntime, collection: CollectionRecord, files: NewDocumentInput[], options: IntakeOptions): Promise<AdmittedFile[]> {
  const tenant = checkMetadata(collection, options.metadata);
  if (options.onDuplicate === 'keep') return admitChecked(runtime, collection, files, options, tenant);
  // Uploads of the same content check for copies one after the other: two concurrent `replace`
  // uploads each deleted the old copy and both kept theirs, and two `skip` uploads both stored it.
  const contentKeys = files.map((file) => `upload:${collection.id}:${file.upload.sha256}`);
  return runtime.writeLocks.run(contentKeys, () => admitChecked(runtime, collection, files, options, tenant));
}

async function admitChecked(runtime: IntakeRuntime, collection: CollectionRecord, files: NewDocumentInput[], options: IntakeOptions, tenant: string | null): Promise<AdmittedFile[]> {
  const copies = options.onDuplicate === 'keep' ? [] : await existingCopies(runtime, collection, files.map((file) => file.upload.sha256), tenant);
  const survivingCopy = new Map<string, DocumentRecord>();
  if (options.onDuplicate === 'skip') for (const copy of copies) if (copy.status !== 'failed' && !survivingCopy.has(copy.sha256)) survivingCopy.set(copy.sha256, copy);

  const firstInRequest = new Map<string, number>();
  const toCreate: NewDocumentInput[] = [];
  // Per file: the index into toCreate, or the existing copy it duplicates.
  const plan = files.map((file) => {
    const existing = survivingCopy.get(file.upload.sha256);
    if (existing) return { existing };
    const earlier = options.onDuplicate === 'keep' ? undefined : firstInRequest.get(file.upload.sha256);
    if (earlier !== undefined) return { sameAs: earlier };
    firstInRequest.set(file.upload.sha256, toCreate.length);
    toCreate.push(file);
    return { created: toCreate.length - 1 };
  });

  const created = await createDocuments(runtime.sql, runtime.jobs, collection, toCreate, { metadata: options.metadata, tenant, batchId: options.batchId });
  for (const [index, step] of plan.entries()) if (!('created' in step)) await discardUpload(runtime.files, files[index]!.upload);
  const replaced = options.onDuplicate === 'replace' ? copies : [];
  // The old copies go once the new documents exist, so a failure above leaves them in place.
  await removeDocuments(runtime, collection, replaced.map((copy) => ({ id: copy.id, storageKey: copy.storageKey ?? null })));

  return plan.map((step) => {
    if ('existing' in step) return { document: step.existing!, duplicate: true, replacedDocumentIds: [] };
    const index = 'created' in step ? step.created! : step.sameAs!;
    const document = created[index]!;
    const replacedIds = 'created' in step ? replaced.filter((copy) => copy.sha256 === document.sha256).map((copy) => copy.id) : [];
    return { document, duplicate: !('created' in step), replacedDocumentIds: replacedIds };
  });
}

/** Reads the `on_duplicate` form field (or JSON value); absent means `skip`. */
/** The form fields an upload takes besides its files. */
const INTAKE_FIELDS = ['metadata', 'on_duplicate'];

/**
 * The metadata and on_duplicate of an upload form. Another field is a 400: it was ignored, so a
 * misspelt `metdata` lost the metadata unseen.
 */
export function parseIntakeFields(fields: Record<string, string>): { metadata: Record<string, unknown>; onDuplicate: OnDuplicate } {
  const unknown = Object.keys(fields).find((field) => !INTAKE_FIELDS.includes(field));
  if (unknown !== undefined) throw new BadRequestError(`Field "${unknown}" is not taken: an upload takes "file" parts, "metadata" and "on_duplicate"`);
  return { metadata: parseMetadataField(fields.metadata), onDuplicate: parseOnDuplicate(fields.on_duplicate) };
}

export function parseOnDuplicate(raw: unknown): OnDuplicate {
  if (raw === undefined || raw === null || raw === '') return 'skip';
  if (typeof raw === 'string' && (ON_DUPLICATE as readonly string[]).includes(raw)) return raw as OnDuplicate;
  throw new BadRequestError(`on_duplicate must be one of ${ON_DUPLICATE.join(', ')}`);
}

/** A document record as an upload answers it: with whether it was a duplicate and what it replaced. */
export function serializeAdmitted(admitted: AdmittedFile, collectionName: string) {
  return {
    ...serializeDocument(admitted.document, collectionName),
    duplicate: admitted.duplicate,
    ...(admitted.replacedDocumentIds.length > 0 ? { replaced_document_ids: admitted.replacedDocumentIds } : {}),
  };
}
