import { defineEntity, type InferEntity } from '@mikro-orm/core';

export const DOCUMENT_STATUSES = ['pending', 'processing', 'ready', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

export interface DocumentProgress {
  /** parsing, chunking, embedding, indexing */
  stage: string;
  message: string;
  percent: number;
  /** When a document waiting for its provider is tried next (ISO 8601). */
  next_attempt_at?: string;
}

export const Document = defineEntity({
  name: 'Document',
  tableName: 'documents',
  properties: (p) => ({
    id: p.uuid().primary(),
    collectionId: p.uuid(),
    batchId: p.uuid().nullable(),
    filename: p.string(),
    contentType: p.string(),
    sizeBytes: p.bigint('number'),
    sha256: p.string(),
    storageKey: p.text().nullable(),
    metadata: p.json<Record<string, unknown>>(),
    tenant: p.text().nullable(),
    title: p.text().nullable(),
    /** What the file says about itself, as its parser read it (front matter, document properties). */
    sourceMetadata: p.json<Record<string, unknown>>(),
    status: p.string().$type<DocumentStatus>(),
    progress: p.json<DocumentProgress>().nullable(),
    error: p.text().nullable(),
    chunkCount: p.integer(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    processedAt: p.datetime().nullable(),
  }),
});
export type DocumentRecord = InferEntity<typeof Document>;
