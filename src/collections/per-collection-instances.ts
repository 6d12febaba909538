/**
 * One instance per collection (an embedding model, a reranker), made again when the collection's
 * settings it was made from change, and dropped with the collection: keyed by settings alone, every
 * change of provider or key left the previous instance behind for the life of the process.
 */
export class PerCollectionInstances<T> {
  private readonly byCollection = new Map<string, { settings: string; instance: T }>();

  /** The collection's instance for `settings` (any string that changes when they do). */
  get(collectionId: string, settings: string, make: () => T): T {
    const current = this.byCollection.get(collectionId);
    if (current?.settings === settings) return current.instance;
    const instance = make();
    this.byCollection.set(collectionId, { settings, instance });
    return instance;
  }

  forget(collectionId: string): void {
    this.byCollection.delete(collectionId);
  }
}
