/**
 * Packs the SQL keyword index's postings: per (collection, tenant, term), every posting row into
 * one bytea in `keyword_packed_postings`, the rows marked `packed`. A query then reads a term's
 * postings as that one value, less the keys in `keyword_packed_removals` (postings deleted since),
 * plus the rows not packed yet (sql-keyword-index.ts). The rows stay the source of truth.
 *
 * Why: PostgreSQL's executor visits about two postings a microsecond, so a long question over 70k
 * chunks read 85k posting rows in about 45 ms. Cranfield's 225 questions over those 70k chunks took
 * 14 ms p50 packed against 56 ms from the rows (bench/README.md "BM25 index").
 *
 * The price: every posting is written once more when it is packed (its row marked), and each packing
 * of a term writes its whole value. While Cranfield grew to 30 copies (42k chunks) with a round
 * after each copy, the rounds took as long as the index's own writes (bench/README.md "BM25 index").
 *
 * A term is due once its changes (postings added or removed since it was packed) reach a quarter of
 * its packed postings, and at least `minimumChanges`: a common term is rewritten a few times as it
 * grows, not at every upload, and its rows not packed stay a fraction of its postings.
 *
 * Terms are packed a batch at a time, each batch one REPEATABLE READ transaction. It locks the
 * terms' packed values (NOWAIT) and marks their rows not packed yet (waiting at most `lockWaitMs`
 * for a row lock), and writes each packed value less its removals merged with those rows, in key
 * order (encoded-postings.ts says why). It never touches the rows packed before, so a deletion of
 * them never waits for it:
 * - a row a concurrent writer inserts after the snapshot is neither packed nor marked, so it stays
 *   a row not packed, which queries read;
 * - a row not packed that a concurrent deletion holds, or deleted after the snapshot, fails the
 *   lock or the snapshot: the batch is packed again term by term, and that term is skipped until
 *   the next round;
 * - a deletion that arrives while a row not packed is marked waits, then deletes the row marked
 *   packed and records the removal (sql-keyword-writes.ts), which this transaction can no longer
 *   erase;
 * - a removal recorded after the snapshot (a deletion of a row packed before) is not in the
 *   snapshot, so it is neither applied nor cleared: its key stays in the new value, and queries
 *   keep leaving it out until the next packing of the term applies it;
 * - a second packer of the same term (another replica) fails to lock the packed value, or, for a
 *   term packed for the first time, its rows.
 * - a truncate's clearing of the collection (sql-keyword-index.ts, clearDeletedRows), which deletes
 *   packed values and unmarks rows in several statements, holds the collection's keyword write lock
 *   alone: a batch shares it first, so the two never interleave.
 * It never waits long for a lock a writer, a deletion or another packer holds, so it is never part
 * of a deadlock with them.
 */
import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../../concurrency/periodic-rounds.js';
import type { SqlRunner } from '../../plugins.js';
import { decodeKeys, encodedPostingBytes, encodedPostingSql, updatePackedPostings } from './encoded-postings.js';
import { keywordWriteLockId } from './sql-keyword-writes.js';

export interface PackingSettings {
  /** Changes a term needs before it is packed at all. */
  minimumChanges: number;
  /** Changes, as a share of the term's packed postings, that make it due again. */
  changeShare: number;
  /** Terms packed per round, the most changed first. */
  termsPerRound: number;
}

export const defaultPackingSettings: PackingSettings = { minimumChanges: 32, changeShare: 0.25, termsPerRound: 2000 };

interface DueTerm {
  collection_id: string;
  tenant: string;
  term: string;
}

/**
 * lock_not_available (NOWAIT), serialization_failure (REPEATABLE READ) and unique_violation (two
 * packers inserting a term's first value): another transaction got there first.
 */
const concurrencyFailureCodes = new Set(['55P03', '40001', '23505']);

function isConcurrencyFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && concurrencyFailureCodes.has(code);
}

async function dueTerms(sql: SqlRunner, settings: PackingSettings): Promise<Array<DueTerm & { changes: number }>> {
  const rows = await sql<DueTerm & { changes: number | string }>(
    `with loose as (
       select collection_id, tenant, term, count(*) as changes from keyword_postings where not packed
       group by collection_id, tenant, term
     ), removals as (
       select collection_id, tenant, term, count(*) as changes from keyword_packed_removals
       group by collection_id, tenant, term
     ), changed as (
       select collection_id, tenant, term, coalesce(loose.changes, 0) + coalesce(removals.changes, 0) as changes
       from loose full join removals using (collection_id, tenant, term)
     )
     select changed.collection_id, changed.tenant, changed.term, changed.changes
     from changed left join keyword_packed_postings packed using (collection_id, tenant, term)
     where changed.changes >= greatest(?::float8, coalesce(packed.posting_count, 0) * ?::float8)
     order by changed.changes desc
     limit ?`,
    [settings.minimumChanges, settings.changeShare, settings.termsPerRound],
  );
  return rows.map((row) => ({ ...row, changes: Number(row.changes) }));
}

/** The terms of a batch as unnest(...) arguments, and a join condition on them for `table`. */
function termsOf(terms: DueTerm[]) {
  return {
    params: [terms.map((term) => term.collection_id), terms.map((term) => term.tenant), terms.map((term) => term.term)],
    unnest: 'unnest(?::uuid[], ?::text[], ?::text[]) as due (collection_id, tenant, term)',
    sameTerm: (table: string) => `${table}.collection_id = due.collection_id and ${table}.tenant = due.tenant and ${table}.term = due.term`,
  };
}

const termKey = (row: DueTerm) => `${row.collection_id}\u0000${row.tenant}\u0000${row.term}`;

interface TermValue extends DueTerm {
  value: Uint8Array;
}

/**
 * Packs a batch of terms in one transaction, each statement for the whole batch: with a
 * transaction of seven statements a term, the rounds of the growth benchmark took 119 s against
 * 70.5 s batched (bench/README.md "BM25 index"). False when a concurrent transaction held or
 * changed any of their rows or values: nothing is written, and each term can be tried alone.
 */
async function packTerms(sql: SqlRunner, terms: DueTerm[]): Promise<boolean> {
  const due = termsOf(terms);
  try {
    await sql.transaction(async (run) => {
      await run('set transaction isolation level repeatable read');
      await run(`set local lock_timeout = '${lockWaitMs}ms'`);
      await run(
        'select pg_advisory_xact_lock_shared(lock_id) from unnest(?::bigint[]) as lock_id',
        [[...new Set(terms.map((term) => term.collection_id))].map(keywordWriteLockId)],
      );
      const current = await run<TermValue>(
        `select packed.collection_id, packed.tenant, packed.term, packed.postings as value
         from keyword_packed_postings packed join ${due.unnest} on ${due.sameTerm('packed')}
         for update of packed nowait`,
        due.params,
      );
      // Marked and read in one statement: a lock taken first (FOR UPDATE) wrote every row once more.
      const loose = await run<TermValue>(
        `with marked as (
           update keyword_postings posting set packed = true from ${due.unnest}
           where ${due.sameTerm('posting')} and not posting.packed
           returning posting.collection_id, posting.tenant, posting.term, ${encodedPostingSql} as encoded
         )
         select collection_id, tenant, term, string_agg(encoded, ''::bytea) as value from marked group by collection_id, tenant, term`,
        due.params,
      );
      const removed = await run<TermValue>(
        `select removal.collection_id, removal.tenant, removal.term, string_agg(int8send(removal.chunk_key), ''::bytea) as value
         from keyword_packed_removals removal join ${due.unnest} on ${due.sameTerm('removal')}
         group by removal.collection_id, removal.tenant, removal.term`,
        due.params,
      );
      const valueOf = (rows: TermValue[]) => new Map(rows.map((row) => [termKey(row), row.value]));
      const currentValues = valueOf(current);
      const looseValues = valueOf(loose);
      const removedValues = valueOf(removed);
      const packed: Array<DueTerm & { postings: Buffer }> = [];
      const emptied: DueTerm[] = [];
      for (const term of terms) {
        const key = termKey(term);
        const removals = removedValues.get(key);
        const postings = updatePackedPostings(currentValues.get(key), removals ? decodeKeys(removals) : new Set(), looseValues.get(key));
        if (postings.byteLength > 0) packed.push({ ...term, postings });
        else if (currentValues.has(key)) emptied.push(term);
      }
      if (packed.length > 0) {
        // One bytea with every value, cut in SQL: an array parameter of bytea values is not sent as one.
        const lengths = packed.map((term) => term.postings.byteLength);
        const starts: number[] = [];
        let start = 1;
        for (const length of lengths) {
          starts.push(start);
          start += length;
        }
        await run(
          `insert into keyword_packed_postings (collection_id, tenant, term, posting_count, postings)
           select due.collection_id, due.tenant, due.term, due.byte_count / ${encodedPostingBytes}, substr(?::bytea, due.first_byte, due.byte_count)
           from unnest(?::uuid[], ?::text[], ?::text[], ?::integer[], ?::integer[]) as due (collection_id, tenant, term, first_byte, byte_count)
           on conflict (collection_id, tenant, term) do update set posting_count = excluded.posting_count, postings = excluded.postings`,
          [Buffer.concat(packed.map((term) => term.postings)), ...termsOf(packed).params, starts, lengths],
        );
      }
      if (emptied.length > 0) {
        const gone = termsOf(emptied);
        await run(`delete from keyword_packed_postings packed using ${gone.unnest} where ${gone.sameTerm('packed')}`, gone.params);
      }
      if (removed.length > 0) {
        const applied = termsOf(removed);
        await run(`delete from keyword_packed_removals removal using ${applied.unnest} where ${applied.sameTerm('removal')}`, applied.params);
      }
    });
    return true;
  } catch (error) {
    if (isConcurrencyFailure(error)) return false;
    throw error;
  }
}

/**
 * A transaction packs at most this many terms, and stops taking more once their changes reach
 * `changesPerTransaction`: the rows it marks stay locked until it commits, and a deletion of one of
 * them waits that long. While Cranfield grew to 42k chunks (`--growth-copies 30` of
 * bench/quality/keyword-index-quality.ts), batches of 100 terms alone took 0.09 s at the median but
 * up to 4.3 s with the most common terms; with the cap on changes too, 0.17 s and at most 0.31 s, in
 * as much time in all.
 */
const termsPerTransaction = 100;
const changesPerTransaction = 10_000;

function transactionBatches<Term extends { changes: number }>(terms: Term[]): Term[][] {
  const batches: Term[][] = [];
  let batch: Term[] = [];
  let changes = 0;
  for (const term of terms) {
    if (batch.length > 0 && (batch.length === termsPerTransaction || changes + term.changes > changesPerTransaction)) {
      batches.push(batch);
      batch = [];
      changes = 0;
    }
    batch.push(term);
    changes += term.changes;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/**
 * The longest a packing waits for a row lock (UPDATE has no NOWAIT). Then it gives up as with
 * NOWAIT, so a deletion that holds one row and waits for another the packing holds is never part
 * of a deadlock for long: PostgreSQL would only look for one after `deadlock_timeout` (1 s), and
 * might end the deletion.
 */
const lockWaitMs = 20;

/**
 * One round: packs the due terms, the most changed first, a batch per transaction. A batch that
 * meets a concurrent transaction is packed again term by term, so only the terms it touched are
 * skipped (they are due again next round). `settled`: every due term was packed, none left for
 * another round.
 */
async function packRound(sql: SqlRunner, settings: PackingSettings): Promise<{ packed: number; skipped: number; settled: boolean }> {
  let packed = 0;
  let skipped = 0;
  const due = await dueTerms(sql, settings);
  for (const batch of transactionBatches(due)) {
    if (await packTerms(sql, batch)) {
      packed += batch.length;
      continue;
    }
    for (const term of batch) {
      if (await packTerms(sql, [term])) packed += 1;
      else skipped += 1;
    }
  }
  return { packed, skipped, settled: skipped === 0 && due.length < settings.termsPerRound };
}

/** One round that always looks for due terms, as benchmarks and tests run it. */
export async function packDueTerms(sql: SqlRunner, settings: PackingSettings = defaultPackingSettings): Promise<{ packed: number; skipped: number }> {
  const { packed, skipped } = await packRound(sql, settings);
  return { packed, skipped };
}

/**
 * Changes whenever the index's postings do: each write or removal of postings changes its
 * partitions' `keyword_stats` rows in the same transaction (sql-keyword-writes.ts), every time as a
 * new row version with its writer's transaction id (`xmin`), and drops the rows of partitions it
 * empties. Reading it costs a row per partition, against every posting for dueTerms.
 */
async function postingWritesFingerprint(sql: SqlRunner): Promise<string> {
  const [row] = await sql<{ fingerprint: string | null }>(
    `select md5(string_agg(collection_id::text || md5(tenant) || xmin::text, ',' order by collection_id, tenant)) as fingerprint
     from keyword_stats`,
  );
  return row?.fingerprint ?? '';
}

/**
 * Runs a packing round every `intervalMs` (0: never), one at a time. A round after one that left
 * nothing due, with no posting written or removed since, finds nothing due either, so it is skipped:
 * an index not written to costs a row per partition a round, not a scan of the postings table (0.7
 * against 330 ms at 34k chunks and 2.1M postings on PostgreSQL, bench/README.md "BM25 index").
 */
export class KeywordPostingPacker {
  private readonly rounds: PeriodicRounds;
  /** The fingerprint read before the last round that settled. */
  private settledAt: string | undefined;

  constructor(
    private readonly sql: SqlRunner,
    logger: FastifyBaseLogger,
    intervalMs: number,
    private readonly settings: PackingSettings = defaultPackingSettings,
  ) {
    this.rounds = new PeriodicRounds(async () => {
      const round = await this.packChangedTerms();
      if (round && round.packed + round.skipped > 0) logger.debug(round, 'packed keyword postings');
    }, { intervalMs, logger, work: 'packing keyword postings' });
  }

  /**
   * One round; undefined when it was skipped. The fingerprint is read before the due terms: a write
   * that commits in between changes it, so the next round looks again.
   */
  async packChangedTerms(): Promise<{ packed: number; skipped: number } | undefined> {
    const fingerprint = await postingWritesFingerprint(this.sql);
    if (fingerprint === this.settledAt) return undefined;
    const { packed, skipped, settled } = await packRound(this.sql, this.settings);
    this.settledAt = settled ? fingerprint : undefined;
    return { packed, skipped };
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }
}
