import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { findCollection } from '../collections/collections.service.js';
import { NameParams } from '../collections/collections.routes.js';
import { BadRequestError } from '../errors.js';
import { requireActor } from '../http/authenticate.js';
import { NEEDS_DISK_SPACE } from '../http/disk-space-check.js';
import { scope } from '../http/route-access.js';
import type { AppServices } from '../services.js';
import { isRefused, receiveMultipartFiles, removeReceived, type ReceivedFile } from '../uploads/multipart-files.js';
import { BatchUploadForm } from '../uploads/upload-forms.js';
import {
  admittedEntry, batchDetails, batchStatus, deleteBatch, discardBatch, findBatch, newBatchId, openBatch, recordBatchFiles, refusedEntry,
  serializeNewBatch, type BatchEntry,
} from './batches.service.js';
import { admitFiles, intakeRuntime, parseIntakeFields, type AdmittedFile } from './document-intake.js';
import { removalRuntime } from './document-removal.js';
import { BatchStatusView, BatchView, NewBatchView } from './document-response-schemas.js';

const BatchParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }), id: Type.String({ format: 'uuid' }) });

export const batchRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const { sql, files } = services;
  const tags = ['documents'];

  app.post('/v1/collections/:name/documents/batch', {
    config: { ...scope('document:upload'), ...NEEDS_DISK_SPACE, openapi: { success: 202, body: BatchUploadForm, response: NewBatchView } },
    schema: {
      tags, params: NameParams, consumes: ['multipart/form-data'],
      summary: 'Upload several files (multipart `file` parts, optional `metadata` and `on_duplicate` for all); 202 with one result per file, refused files included',
    },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    const { outcomes, fields } = await receiveMultipartFiles(request, {
      files, parsers: services.parsers, collectionId: collection.id, limitBytes: services.config.uploadLimitBytes,
      refusals: 'collect', inlineMaxBytes: services.config.originalsInDatabaseMaxBytes, partRule: 'Send the files in multipart parts named "file"',
    });
    if (outcomes.length === 0) throw new BadRequestError('No files in the batch: send each in a multipart part named "file"');
    const batchId = newBatchId();
    let admitted: AdmittedFile[];
    try {
      const { metadata, onDuplicate } = parseIntakeFields(fields);
      const received = outcomes.filter((outcome): outcome is ReceivedFile => !isRefused(outcome));
      await openBatch(sql, collection, batchId, 'upload');
      admitted = await admitFiles(intakeRuntime(services), collection, received, { metadata, onDuplicate, batchId });
    } catch (error) {
      // Refused before any document exists (metadata, tenant): nothing of the request stays.
      await discardBatch(sql, batchId);
      await removeReceived(files, outcomes);
      throw error;
    }
    const pending = [...admitted];
    const results: Array<AdmittedFile | BatchEntry> = outcomes.map((outcome) => (isRefused(outcome) ? refusedEntry(outcome) : pending.shift()!));
    await recordBatchFiles(sql, batchId, results.map((result) => ('document' in result ? admittedEntry(result) : result)));
    return reply.code(202).send(serializeNewBatch(batchId, collection, results));
  });

  app.get('/v1/collections/:name/batches/:id', {
    config: { ...scope('document:read'), openapi: { response: BatchView } },
    schema: { tags, params: BatchParams, summary: 'A batch with the current record of each of its files, in upload order' },
  }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return batchDetails(sql, collection, await findBatch(sql, collection, request.params.id));
  });

  app.get('/v1/collections/:name/batches/:id/status', {
    config: { ...scope('document:read'), openapi: { response: BatchStatusView } },
    schema: { tags, params: BatchParams, summary: '`{batch_id, total, by_status, done}`' },
  }, async (request) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    return batchStatus(sql, await findBatch(sql, collection, request.params.id));
  });

  app.delete('/v1/collections/:name/batches/:id', {
    config: scope('document:delete'),
    schema: { tags, params: BatchParams, summary: 'Delete the documents the batch created (chunks, vectors, files) and the batch' },
  }, async (request, reply) => {
    const collection = await findCollection(services.collections, requireActor(request), request.params.name);
    await deleteBatch(removalRuntime(services), collection, await findBatch(sql, collection, request.params.id));
    return reply.code(204).send();
  });
};
