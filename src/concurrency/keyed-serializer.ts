/** Runs work that names keys one holder at a time per key (see KeyedSerializer, ReplicaKeyLocks). */
export interface WriteLocks {
  run<T>(keys: Iterable<string>, work: () => Promise<T>): Promise<T>;
  /** Releases what the locks hold outside the process (a database session). */
  close(): Promise<void>;
}

/**
 * Runs work that names keys (a collection's raw-vector ids, the content hashes of an upload) one
 * at a time per key within this process; work on other keys runs alongside. A write that reads,
 * then writes several statements (a raw vector's row, then its postings and vector; a duplicate
 * check, then the document) is otherwise interleaved with a concurrent write of the same key on
 * PostgreSQL's pool: both replaced the postings and BM25 counted the chunk twice, and two
 * `on_duplicate=replace` uploads each kept their copy. Work queues behind every earlier holder of
 * its keys at once, so it only ever waits for work that came before it: none can wait in a cycle.
 * Other replicas are not serialized with this one: ReplicaKeyLocks adds that on PostgreSQL.
 */
export class KeyedSerializer implements WriteLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(keys: Iterable<string>, work: () => Promise<T>): Promise<T> {
    const unique = [...new Set(keys)];
    let release!: () => void;
    const done = new Promise<void>((resolve) => { release = resolve; });
    const waits: Array<Promise<void>> = [];
    for (const key of unique) {
      const previous = this.tails.get(key);
      if (previous) waits.push(previous);
      this.tails.set(key, done);
    }
    try {
      await Promise.all(waits);
      return await work();
    } finally {
      release();
      for (const key of unique) if (this.tails.get(key) === done) this.tails.delete(key);
    }
  }

  async close(): Promise<void> {
    // Nothing is held outside the process.
  }
}
