import type { CollectionRecord } from '../db/entities/index.js';
import { sameHeadingPath } from '../parsing/heading-trail.js';
import { isPixelCount } from '../parsing/picture-sizes.js';
import type { SqlRunner } from '../plugins.js';
import { elementContentUrl } from './element-content.js';

/** An image element shown beside a query result (spec 2.6: `multimodal_elements`). */
export interface MultimodalElement {
  id: string;
  type: string;
  text: string;
  page: number | null;
  heading_path: string[];
  content_type: string | null;
  /** In pixels, as shown; null for a picture whose size could not be read. */
  width: number | null;
  height: number | null;
  caption: string | null;
  content_url: string;
}

interface ImageRow {
  id: string; document_id: string; type: string; text: string; page: number | null; heading_path: string[]; content_type: string | null; caption: string | null;
  /** Whatever the element's metadata holds (a plugin parser's too). */
  width: unknown; height: unknown;
}

interface ResultLike {
  document_id: string | null;
  metadata: Record<string, unknown>;
  multimodal_elements?: MultimodalElement[];
}

/**
 * Adds `multimodal_elements` to each result: the stored images of the result's page when the chunk
 * knows its page (PDF), else of its section (same heading path). One query for all results.
 * Collections without `multimodal_enabled` store no images, so their results get empty lists.
 */
export async function attachMultimodalElements(sql: SqlRunner, collection: CollectionRecord, results: ResultLike[]): Promise<void> {
  const documentIds = [...new Set(results.map((result) => result.document_id).filter((id): id is string => id !== null))];
  const images = collection.multimodalEnabled && documentIds.length > 0
    ? await sql<ImageRow>(
      `select id, document_id, type, text, page, heading_path, content_type, caption, metadata->'width' as width, metadata->'height' as height
       from document_elements
       where document_id = any(?::uuid[]) and type = 'image' and storage_key is not null order by document_id, element_index`,
      [documentIds],
    )
    : [];
  for (const result of results) {
    const page = typeof result.metadata.page === 'number' ? result.metadata.page : undefined;
    result.multimodal_elements = images
      .filter((image) => image.document_id === result.document_id)
      .filter((image) => (page !== undefined ? image.page === page : sameHeadingPath(Array.isArray(result.metadata.heading_path) ? result.metadata.heading_path : [], image.heading_path)))
      .map((image) => ({
        id: image.id, type: image.type, text: image.text, page: image.page, heading_path: image.heading_path,
        content_type: image.content_type, width: isPixelCount(image.width) ? image.width : null, height: isPixelCount(image.height) ? image.height : null, caption: image.caption, content_url: elementContentUrl(collection.name, image.document_id, image.id),
      }));
  }
}
