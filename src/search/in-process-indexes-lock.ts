import os from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import { advisoryLockId } from '../concurrency/replica-key-locks.js';
import { StartRefusal } from '../errors.js';

/** The lock's session name, so that operators can tell it in pg_stat_activity; PostgreSQL keeps 63 bytes. */
export const LOCK_SESSION_NAME = `retrieval-service indexes ${os.hostname()}:${process.pid}`.slice(0, 63);

/** The advisory lock one replica of a database holds while its search indexes live in its process. */
export const IN_PROCESS_INDEXES_LOCK_ID = advisoryLockId('in-process-indexes');

/** After the lock's session is lost, how long before it is taken again. */
const RETAKE_MS = 2_000;

export class InProcessIndexesInUseError extends StartRefusal {}

interface Holder {
  application_name: string | null;
  client_addr: string | null;
  backend_start: Date | null;
}

/**
 * KEYWORD_INDEX=memory and VECTOR_STORE=embedded keep the search indexes in the process: on
 * PostgreSQL a second replica never finds what the other writes to a collection it has loaded (a
 * document ingested through one replica stayed unfound through the other). A warning at start did
 * not stop anyone; so the replica that keeps indexes in its process holds a session-level advisory
 * lock on its database, and another such replica refuses to start while it does. With the defaults
 * on PostgreSQL (KEYWORD_INDEX=sql, VECTOR_STORE=pgvector) nothing is taken and replicas are free.
 *
 * The lock lives on a connection of its own, outside the pool (a pooled connection could be closed
 * when idle, and the lock with it). When that session is lost (PostgreSQL restarted, a proxy cut it)
 * PostgreSQL has released the lock: it is taken again every RETAKE_MS, and if another replica has
 * taken it meanwhile, that is logged as an error, since both now miss each other's writes.
 */
export class InProcessIndexesLock {
  private client: pg.Client | undefined;
  private retakeTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Whether the last failed retake was already logged as held elsewhere (logged once, not every RETAKE_MS). */
  private reportedHeldElsewhere = false;

  private constructor(private readonly databaseUrl: string, private readonly settings: string[], private readonly logger: FastifyBaseLogger) {}

  /** Takes the lock or refuses the start (InProcessIndexesInUseError). `settings` name the in-process indexes, for the messages. */
  static async take(databaseUrl: string, settings: string[], logger: FastifyBaseLogger): Promise<InProcessIndexesLock> {
    const lock = new InProcessIndexesLock(databaseUrl, settings, logger);
    const holder = await lock.tryTake();
    if (holder !== 'taken') throw new InProcessIndexesInUseError(lock.describeRefusal(holder));
    logger.info({ inProcessIndexes: settings }, `${lock.subject()} search indexes in this process: this replica holds the database's lock for them, and another replica with them will not start`);
    return lock;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retakeTimer);
    const client = this.client;
    this.client = undefined;
    // Ending the session releases the lock.
    await client?.end();
  }

  /** 'taken', or who holds the lock (undefined when that cannot be read). */
  private async tryTake(): Promise<'taken' | Holder | undefined> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: LOCK_SESSION_NAME });
    client.on('error', () => undefined);
    await client.connect();
    try {
      const { rows: [row] } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1::bigint) as locked', [IN_PROCESS_INDEXES_LOCK_ID.toString()]);
      if (!row!.locked) {
        const holder = await readHolder(client);
        await client.end();
        return holder;
      }
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    client.on('end', () => this.lost(client));
    this.client = client;
    return 'taken';
  }

  private lost(client: pg.Client): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    this.logger.warn(`the session holding the lock of the in-process search indexes ended; taking it again in ${RETAKE_MS / 1000} s`);
    this.scheduleRetake();
  }

  private scheduleRetake(): void {
    this.retakeTimer = setTimeout(() => void this.retake(), RETAKE_MS);
    this.retakeTimer.unref();
  }

  private async retake(): Promise<void> {
    if (this.closed) return;
    try {
      const holder = await this.tryTake();
      if (holder === 'taken') {
        if (this.closed) await this.close();
        else this.logger.info('the lock of the in-process search indexes is held again');
        this.reportedHeldElsewhere = false;
        return;
      }
      if (!this.reportedHeldElsewhere) {
        this.logger.error(`another replica took the lock of the in-process search indexes while this one had lost it (${describeHolder(holder)}): ${this.subject()} search indexes in each process, and each misses the other's writes; stop one of them`);
        this.reportedHeldElsewhere = true;
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'could not take the lock of the in-process search indexes again; trying again');
    }
    if (!this.closed) this.scheduleRetake();
  }

  private subject(): string {
    return `${this.settings.join(' and ')} ${this.settings.length > 1 ? 'keep' : 'keeps'}`;
  }

  private describeRefusal(holder: Holder | undefined): string {
    return `${this.subject()} search indexes in this process, and another replica on this database keeps them in its own (${describeHolder(holder)}): `
      + "each would miss the other's writes, so this one does not start. Run one replica on this database (on Kubernetes, a Deployment with strategy Recreate), "
      + 'or use KEYWORD_INDEX=sql and VECTOR_STORE=pgvector, the defaults with DATABASE_URL, which any number of replicas share';
  }
}

/** The session holding the lock, as far as this role may see it (pg_stat_activity hides other roles' details). */
async function readHolder(client: pg.Client): Promise<Holder | undefined> {
  const { rows: [holder] } = await client.query<Holder>(
    `select a.application_name, host(a.client_addr) as client_addr, a.backend_start
       from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and l.granted and l.objsubid = 1
        and l.database = (select oid from pg_database where datname = current_database())
        and ((l.classid::bigint << 32) | l.objid::bigint) = $1::bigint`,
    [IN_PROCESS_INDEXES_LOCK_ID.toString()],
  );
  return holder;
}

function describeHolder(holder: Holder | undefined): string {
  if (!holder?.application_name) return 'its session could not be read';
  const from = holder.client_addr ? ` from ${holder.client_addr}` : '';
  const since = holder.backend_start ? `, connected since ${holder.backend_start.toISOString()}` : '';
  return `session "${holder.application_name}"${from}${since}`;
}
