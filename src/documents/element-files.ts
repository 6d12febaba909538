import type { CollectionRecord } from '../db/entities/index.js';
import type { DocumentElement } from '../plugins.js';
import type { FileStore } from '../storage/file-store.js';
import type { ImageCaptioner } from './image-captioner.js';

/** What an image element records beside its text (columns of document_elements). */
export interface ElementFile {
  storage_key: string | null;
  content_type: string | null;
  size_bytes: number | null;
  caption: string | null;
  caption_status: string | null;
  caption_error: string | null;
}

export interface StoredElementImages {
  /** The elements to chunk: an image's caption joins its alt text, so the picture is searchable by what it shows. */
  elements: DocumentElement[];
  /** Per element, in order; null for elements that are not stored images. */
  files: Array<ElementFile | null>;
}

export interface ElementImageRuntime {
  files: FileStore;
  captioner: ImageCaptioner;
}

/** Every element image of a document lives under this prefix, so re-processing and deletion remove them at once. */
export function elementFilesPrefix(collectionId: string, documentId: string): string {
  return `${collectionId}/elements/${documentId}`;
}

/**
 * Keeps the pictures of `image` elements as files when the collection is multimodal, and captions
 * them when it asks for enrichment. Images of an earlier run of the same document are replaced.
 */
export async function storeElementImages(
  runtime: ElementImageRuntime, collection: CollectionRecord, documentId: string, elements: DocumentElement[],
): Promise<StoredElementImages> {
  const files: Array<ElementFile | null> = elements.map(() => null);
  if (!collection.multimodalEnabled) return { elements, files };
  const prefix = elementFilesPrefix(collection.id, documentId);
  await runtime.files.remove(prefix);
  const enriched = [...elements];
  for (const [index, element] of elements.entries()) {
    if (element.type !== 'image' || !element.image || element.image.data.length === 0) continue;
    const key = `${prefix}/${index}`;
    await runtime.files.write(key, element.image.data);
    const caption = collection.multimodalEnrichmentEnabled ? await runtime.captioner.caption(element.image) : null;
    files[index] = {
      storage_key: key, content_type: element.image.contentType, size_bytes: element.image.data.length,
      caption: caption?.caption ?? null, caption_status: caption?.status ?? null, caption_error: caption?.error ?? null,
    };
    if (caption?.caption) enriched[index] = { ...element, text: [element.text, caption.caption].filter(Boolean).join('\n') };
  }
  return { elements: enriched, files };
}
