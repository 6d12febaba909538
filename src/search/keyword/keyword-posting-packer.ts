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
 * The price: every posting is written once more when it is first packed (its row marked), and a
 * term's rows are all locked each time it is packed again. Packing 70k chunks' 4.35M postings from
 * scratch took 181 s.
 *
 * A term is due once its changes (postings added or removed since it was packed) reach a quarter of
 * its packed postings, and at least `minimumChanges`: a common term is rewritten a few times as it
 * grows, not at every upload, and its rows not packed stay a fraction of its postings.
 *
 * Packing a term is one REPEATABLE READ transaction that locks the term's rows with NOWAIT:
 * - a row a concurrent writer inserts after the snapshot is neither packed nor marked, so it stays
 *   a loose row that queries read;
 * - a row a concurrent deletion holds, or deleted after the snapshot, fails the lock or the
 *   snapshot: the term is skipped and comes again next round;
 * - a deletion that arrives while the term is locked waits, then deletes the row marked packed and
 *   records the removal (sql-keyword-index.ts), which this transaction can no longer erase.
 * It never waits for a row lock a writer or a deletion holds, so it cannot deadlock with them.
 */
import type { FastifyBaseLogger } from 'fastify';
import { PeriodicRounds } from '../../concurrency/periodic-rounds.js';
import type { SqlRunner } from '../../plugins.js';
import { encodedPostingSql } from './encoded-postings.js';

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

/** lock_not_available (NOWAIT) and serialization_failure (REPEATABLE READ): another transaction got there first. */
const concurrencyFailureCodes = new Set(['55P03', '40001']);

function isConcurrencyFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && concurrencyFailureCodes.has(code);
}

async function dueTerms(sql: SqlRunner, settings: PackingSettings): Promise<DueTerm[]> {
  return sql<DueTerm>(
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
     select changed.collection_id, changed.tenant, changed.term
     from changed left join keyword_packed_postings packed using (collection_id, tenant, term)
     where changed.changes >= greatest(?::float8, coalesce(packed.posting_count, 0) * ?::float8)
     order by changed.changes desc
     limit ?`,
    [settings.minimumChanges, settings.changeShare, settings.termsPerRound],
  );
}

/** Packs one term; false when a concurrent transaction held or changed its rows (it is due again next round). */
async function packTerm(sql: SqlRunner, { collection_id: collectionId, tenant, term }: DueTerm): Promise<boolean> {
  const key = [collectionId, tenant, term];
  const sameTerm = 'collection_id = ?::uuid and tenant = ? and term = ?';
  try {
    await sql.transaction(async (run) => {
      await run('set transaction isolation level repeatable read');
      const packed = await run(
        `insert into keyword_packed_postings (collection_id, tenant, term, posting_count, postings)
         select ?::uuid, ?, ?, count(*), string_agg(encoded, ''::bytea order by chunk_key)
         from (select chunk_key, ${encodedPostingSql} as encoded from keyword_postings where ${sameTerm} for update nowait) locked
         having count(*) > 0
         on conflict (collection_id, tenant, term) do update set posting_count = excluded.posting_count, postings = excluded.postings
         returning posting_count`,
        [...key, ...key],
      );
      if (packed.length === 0) await run(`delete from keyword_packed_postings where ${sameTerm}`, key);
      await run(`update keyword_postings set packed = true where ${sameTerm} and not packed`, key);
      await run(`delete from keyword_packed_removals where ${sameTerm}`, key);
    });
    return true;
  } catch (error) {
    if (isConcurrencyFailure(error)) return false;
    throw error;
  }
}

/** One round: packs the due terms, the most changed first. */
export async function packDueTerms(sql: SqlRunner, settings: PackingSettings = defaultPackingSettings): Promise<{ packed: number; skipped: number }> {
  let packed = 0;
  let skipped = 0;
  for (const term of await dueTerms(sql, settings)) {
    if (await packTerm(sql, term)) packed += 1;
    else skipped += 1;
  }
  return { packed, skipped };
}

/** Runs packDueTerms every `intervalMs` (0: never), one round at a time. */
export class KeywordPostingPacker {
  private readonly rounds: PeriodicRounds;

  constructor(sql: SqlRunner, logger: FastifyBaseLogger, intervalMs: number) {
    this.rounds = new PeriodicRounds(async () => {
      const { packed, skipped } = await packDueTerms(sql);
      if (packed + skipped > 0) logger.debug({ packed, skipped }, 'packed keyword postings');
    }, { intervalMs, logger, work: 'packing keyword postings' });
  }

  start(): void {
    this.rounds.start();
  }

  stop(): Promise<void> {
    return this.rounds.stop();
  }
}
