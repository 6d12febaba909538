import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { markLostConnection } from '../db/connection-failures.js';
import { ServiceUnavailableError } from '../errors.js';
import { KeyedSerializer, type WriteLocks } from './keyed-serializer.js';

/** The lock session's application_name, so that operators can tell it in pg_stat_activity. */
export const SESSION_NAME = 'retrieval-service write locks';

/** The advisory lock a key maps to: the first 8 bytes of its SHA-256, as PostgreSQL's bigint. */
export function advisoryLockId(key: string): bigint {
  return createHash('sha256').update(key).digest().readBigInt64BE(0);
}

export interface ReplicaKeyLocksOptions {
  /** How long a write waits for keys another replica holds before it is refused (503). */
  waitMs: number;
  /** Told when the lock session fails; its locks are then released by PostgreSQL. */
  onSessionError: (error: Error) => void;
}

interface Session {
  client: pg.Client;
  alive: boolean;
  /** The last query sent: writers of different keys share the session, and pg wants one query at a time on a client. */
  previous: Promise<unknown>;
}

/** Runs a statement on the session after the ones already sent (pg 8 queued them itself, with a deprecation warning; pg 9 refuses). */
function sessionQuery<Row extends pg.QueryResultRow>(session: Session, text: string, values: unknown[]): Promise<pg.QueryResult<Row>> {
  const result = session.previous.then(() => session.client.query<Row>(text, values));
  session.previous = result.catch(() => undefined);
  return result;
}

/**
 * KeyedSerializer across replicas: after this process's own turn for the keys, the write also
 * takes a PostgreSQL advisory lock per key, so replicas on one database take turns too (two
 * replicas' `replace` uploads of one file each kept their copy; their upserts of one raw-vector id
 * left BM25 counting the chunk twice).
 *
 * The locks are held on one connection of their own, outside the pool, because the write's
 * statements run on the pool: holding a pool connection while waiting for others could exhaust
 * it. That connection only ever asks with `pg_try_advisory_lock`, never waits in PostgreSQL: a
 * session blocked in `pg_advisory_lock` could not release this process's other keys, and two
 * replicas each blocked on the other's key would deadlock. A write gets all its keys or none, and
 * tries again after a short, jittered pause, so no write holds some keys while waiting for others.
 * Within the process one write at a time holds a key, so the session's reentrant counts stay 0 or 1.
 */
export class ReplicaKeyLocks implements WriteLocks {
  private readonly local = new KeyedSerializer();
  private session: Promise<Session> | undefined;
  private current: Session | undefined;
  private closed = false;

  constructor(private readonly databaseUrl: string, private readonly options: ReplicaKeyLocksOptions) {}

  run<T>(keys: Iterable<string>, work: () => Promise<T>): Promise<T> {
    const unique = [...new Set(keys)];
    return this.local.run(unique, async () => {
      const ids = unique.map((key) => advisoryLockId(key).toString());
      const session = await this.acquire(ids);
      try {
        return await work();
      } finally {
        await this.release(session, ids);
      }
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const session = await this.session?.catch(() => undefined);
    this.session = undefined;
    this.current = undefined;
    if (session?.alive) {
      session.alive = false;
      await session.client.end();
    }
  }

  private async acquire(ids: string[]): Promise<Session> {
    const deadline = performance.now() + this.options.waitMs;
    let reconnected = false;
    for (let attempt = 0; ; attempt++) {
      const session = await this.connected().catch((error: unknown) => {
        throw markLostConnection(error);
      });
      let rows: Array<{ id: string; locked: boolean }>;
      try {
        ({ rows } = await sessionQuery<{ id: string; locked: boolean }>(
          session, 'select id::text, pg_try_advisory_lock(id) as locked from unnest($1::bigint[]) as id', [ids],
        ));
      } catch (error) {
        // The session may have been closed while idle (a restart, a proxy's idle timeout): once, a
        // new one is tried; it held no locks of this write.
        this.retire(session);
        if (reconnected) throw markLostConnection(error);
        reconnected = true;
        continue;
      }
      const locked = rows.filter((row) => row.locked).map((row) => row.id);
      if (locked.length === ids.length) return session;
      await this.unlock(session, locked);
      if (performance.now() >= deadline) {
        throw new ServiceUnavailableError(`another replica has been writing the same content or vector ids for over ${this.options.waitMs / 1000} s; try again`);
      }
      await sleep(Math.min(50, 2 ** attempt) * (0.5 + Math.random()));
    }
  }

  private async release(session: Session, ids: string[]): Promise<void> {
    try {
      await this.unlock(session, ids);
    } catch (error) {
      // A lock left held would block this key on every other replica: ending the session makes
      // PostgreSQL release all of its locks (this process's other writers lose theirs too, and
      // finish unserialized rather than block).
      this.options.onSessionError(error as Error);
      this.retire(session);
    }
  }

  private async unlock(session: Session, ids: string[]): Promise<void> {
    // A session that ended holds nothing: PostgreSQL released its locks when it went.
    if (ids.length === 0 || !session.alive) return;
    await sessionQuery(session, 'select pg_advisory_unlock(id) from unnest($1::bigint[]) as id', [ids]);
  }

  private connected(): Promise<Session> {
    if (this.closed) throw new ServiceUnavailableError('the service is stopping');
    if (!this.session) {
      const connecting = this.connect();
      this.session = connecting;
      connecting.catch(() => { if (this.session === connecting) this.session = undefined; });
    }
    return this.session;
  }

  private async connect(): Promise<Session> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: SESSION_NAME });
    const session: Session = { client, alive: true, previous: Promise.resolve() };
    client.on('error', (error) => {
      this.options.onSessionError(error);
      this.retire(session);
    });
    client.on('end', () => this.retire(session));
    try {
      await client.connect();
    } catch (error) {
      this.retire(session);
      throw error;
    }
    this.current = session;
    return session;
  }

  /** Forgets a failed session so that the next write connects again. */
  private retire(session: Session): void {
    if (!session.alive) return;
    session.alive = false;
    if (this.current === session) {
      this.current = undefined;
      this.session = undefined;
    }
    session.client.end().catch(() => undefined);
  }
}
