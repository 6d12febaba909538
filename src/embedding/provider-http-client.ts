import { setTimeout as sleep } from 'node:timers/promises';
import { ProviderError } from '../errors.js';
import type { PluginLogger, RemoteCallPolicy } from '../plugins.js';
import { ConcurrencyLimit, NoFreeSlotError, type Priority } from '../concurrency/concurrency-limit.js';

export const DEFAULT_REMOTE_CALL_POLICY: RemoteCallPolicy = { timeoutMs: 30_000, maxRetries: 4, concurrency: 8, queryTimeoutMs: 10_000 };

/** A server asking to wait longer than this is treated as down for now: the job queue tries again when it asked (IngestionWorker). */
const MAX_RETRY_DELAY_MS = 60_000;
/** The least time worth giving an attempt of a query's call: a retry that would leave it less is not made. */
const MIN_ATTEMPT_MS = 100;
/** Backoff without Retry-After: 0.5 s, 1 s, 2 s, 4 s, 8 s (±20 %), the same curve as the SDK's (spec 8). */
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 8_000;
/** Provider messages are for people; a page of HTML from a proxy is not. */
const MAX_MESSAGE_LENGTH = 300;

export interface ProviderClientOptions {
  /** Names the provider in messages: `openai answered 401: ...`. */
  provider: string;
  apiKey?: string | undefined;
  /** Builds the authentication headers from the key; Bearer by default. */
  authHeaders?: (apiKey: string) => Record<string, string>;
  policy?: RemoteCallPolicy | undefined;
  fetch?: typeof fetch | undefined;
  logger?: PluginLogger | undefined;
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * OpenAI's answer to an account out of credit: a 429 like a rate limit, but no wait mends it (the
 * account's billing does). Retried as a rate limit, a query waited 7.5 s for its 502 and documents
 * waited for the provider for an hour before failing.
 */
function isQuotaExhausted(status: number, body: string): boolean {
  if (status !== 429) return false;
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; type?: unknown } }).error;
    return error?.code === 'insufficient_quota' || error?.type === 'insufficient_quota';
  } catch {
    return false;
  }
}

/** `Retry-After` in seconds or as an HTTP date, or OpenAI's `retry-after-ms`; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const milliseconds = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function backoffMs(attempt: number): number {
  const base = Math.min(BACKOFF_BASE_MS * 2 ** attempt, BACKOFF_MAX_MS);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** The human part of an error body: OpenAI `{error:{message}}`, Cohere `{message}`, Voyage/Jina `{detail}`, TEI `{error}`. */
export function providerMessage(body: string): string {
  let message = body.trim();
  try {
    const json = JSON.parse(body) as Record<string, unknown>;
    const error = json.error as Record<string, unknown> | string | undefined;
    const detail = json.detail as unknown;
    const candidate = (typeof error === 'object' && error !== null ? error.message : error) ?? json.message
      ?? (Array.isArray(detail) ? detail.map((item) => (item as { msg?: unknown }).msg ?? JSON.stringify(item)).join('; ') : detail);
    if (typeof candidate === 'string' && candidate.trim() !== '') message = candidate.trim();
  } catch {
    // Not JSON: the text itself is the message, but for an HTML page (a proxy's or gateway's), which
    // its title says, else its text; its markup said nothing and filled the message.
    if (/^(?:<!doctype html|<html)[\s>]/i.test(message)) {
      const title = /<title[^>]*>([^<]*)<\/title>/i.exec(message)?.[1];
      const text = (title ?? message.replace(/<(script|style)[\s\S]*?<\/\1>|<[^>]*>/gi, ' ')).replace(/\s+/g, ' ').trim();
      message = text ? `an HTML page: ${text}` : 'an HTML page';
    }
  }
  if (message === '') return 'no message';
  return message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH)}...` : message;
}

/**
 * The one HTTP client of every plugin that calls a model provider: JSON POSTs with a timeout per
 * attempt, retries with backoff on 429, 5xx, timeouts and connection failures (honouring
 * Retry-After), a bound on requests in flight, and errors that carry the provider's message but
 * never the API key (providers sometimes echo it back, e.g. "Incorrect API key provided: sk-...").
 */
export class ProviderHttpClient {
  readonly limit: ConcurrencyLimit;
  private readonly policy: RemoteCallPolicy;
  private readonly fetchImpl: typeof fetch;
  /**
   * The run of failed attempts the provider is in, if any. During an outage every request retries
   * (8 in flight, 4 retries each, again at each of the job queue's tries): one warn line per retry
   * filled the log, so the run's first failure is a warn line, the others are debug lines, and the
   * first answer after them says how long it lasted.
   */
  private failures: { since: number; attempts: number; retryLogged: boolean } | undefined;

  constructor(private readonly options: ProviderClientOptions) {
    this.policy = options.policy ?? DEFAULT_REMOTE_CALL_POLICY;
    this.limit = new ConcurrencyLimit(this.policy.concurrency);
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** Removes the API key from any text that leaves this client (messages, logs). */
  redact(text: string): string {
    const key = this.options.apiKey;
    return key && key.length >= 4 ? text.split(key).join('[redacted]') : text;
  }

  private fail(message: string, retryable: boolean, retryAfter?: number): ProviderError {
    return new ProviderError(this.redact(`${this.options.provider} ${message}`), retryable, retryAfter);
  }

  /**
   * `interactive` calls (a query's) end within the policy's `queryTimeoutMs`, the wait for a free
   * connection included: a retry that cannot be made in time is not made.
   */
  async postJson(url: string, body: unknown, priority: Priority = 'background'): Promise<unknown> {
    const budgetMs = priority === 'interactive' ? this.policy.queryTimeoutMs : undefined;
    const budget = budgetMs === undefined ? undefined : { budgetMs, deadline: Date.now() + budgetMs };
    try {
      return await this.limit.run(() => this.postWithRetries(url, JSON.stringify(body), budget), priority, budget?.deadline);
    } catch (error) {
      if (error instanceof NoFreeSlotError) {
        throw this.fail(`had no free connection within ${budgetMs} ms (PROVIDER_QUERY_TIMEOUT_MS): PROVIDER_CONCURRENCY (${error.limit}) requests in flight`, true);
      }
      throw error;
    }
  }

  private async postWithRetries(url: string, payload: string, budget: { deadline: number; budgetMs: number } | undefined): Promise<unknown> {
    const deadline = budget?.deadline;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.options.apiKey) Object.assign(headers, (this.options.authHeaders ?? bearer)(this.options.apiKey));
    // Whether a pause and then an attempt of at least MIN_ATTEMPT_MS still fit before the deadline.
    const inTime = (pauseMs: number) => deadline === undefined || Date.now() + pauseMs + MIN_ATTEMPT_MS <= deadline;
    for (let attempt = 0; ; attempt++) {
      const canRetry = attempt < this.policy.maxRetries;
      const budgetLeft = deadline === undefined ? Number.POSITIVE_INFINITY : deadline - Date.now();
      const timeoutMs = Math.max(1, Math.min(this.policy.timeoutMs, budgetLeft));
      let status: number;
      let text: string;
      let responseHeaders: Headers;
      try {
        const response = await this.fetchImpl(url, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(timeoutMs) });
        status = response.status;
        responseHeaders = response.headers;
        text = await response.text();
      } catch (error) {
        // An attempt the query's budget cut short: the provider did not answer within the budget.
        const failure = budget && timeoutMs < this.policy.timeoutMs
          ? describeTransportError(error, `${budget.budgetMs} ms (PROVIDER_QUERY_TIMEOUT_MS)`)
          : describeTransportError(error, `${timeoutMs} ms`);
        if (isPermanentTransportError(error)) throw this.fail(failure, false);
        this.countFailure();
        const delay = backoffMs(attempt);
        if (!canRetry || !inTime(delay)) throw this.fail(failure, true);
        await this.pause(delay, { attempt, reason: failure });
        continue;
      }
      if (status >= 200 && status < 300) {
        this.noteAnswer();
        return this.parse(text);
      }
      const message = `answered ${status}: ${providerMessage(text)}`;
      if (!isRetryableStatus(status) || isQuotaExhausted(status, text)) throw this.fail(message, false);
      this.countFailure();
      const askedFor = retryAfterMs(responseHeaders);
      const delay = askedFor ?? backoffMs(attempt);
      if (!canRetry || delay > MAX_RETRY_DELAY_MS || !inTime(delay)) throw this.fail(message, true, askedFor);
      await this.pause(delay, { attempt, status, reason: message });
    }
  }

  private parse(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      throw this.fail('answered with a body that is not JSON', false);
    }
  }

  private countFailure(): void {
    if (this.failures) this.failures.attempts += 1;
    else this.failures = { since: Date.now(), attempts: 1, retryLogged: false };
  }

  private noteAnswer(): void {
    if (!this.failures) return;
    const { since, attempts } = this.failures;
    this.failures = undefined;
    this.options.logger?.info({ provider: this.options.provider, failed_attempts: attempts, failing_for_ms: Date.now() - since }, 'provider answers again');
  }

  private async pause(delayMs: number, details: Record<string, unknown>): Promise<void> {
    const line = { provider: this.options.provider, ...details, reason: this.redact(String(details.reason)), retry_in_ms: delayMs };
    if (this.failures && !this.failures.retryLogged) {
      this.failures.retryLogged = true;
      this.options.logger?.warn(line, 'provider call failed; retrying (its further failures are logged at debug level until it answers again)');
    } else {
      this.options.logger?.debug({ ...line, failed_attempts: this.failures?.attempts }, 'provider call failed again; retrying');
    }
    await sleep(delayMs);
  }
}

function bearer(apiKey: string): Record<string, string> {
  return { authorization: `Bearer ${apiKey}` };
}

/**
 * Connection failures a retry cannot mend: a host name that does not exist (a transient DNS failure
 * is EAI_AGAIN), a certificate refused. Retried, they held a query for 7.5 s before its 502.
 */
const PERMANENT_TRANSPORT_CODES = new Set([
  'ENOTFOUND', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function isPermanentTransportError(error: unknown): boolean {
  const code = (error as { cause?: { code?: unknown } }).cause?.code;
  return typeof code === 'string' && PERMANENT_TRANSPORT_CODES.has(code);
}

function describeTransportError(error: unknown, timeout: string): string {
  const name = (error as { name?: string }).name;
  if (name === 'TimeoutError' || name === 'AbortError') return `did not answer within ${timeout}`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return `could not be reached: ${cause?.code ?? cause?.message ?? (error as Error).message ?? String(error)}`;
}

/** Joins a base URL (which includes its version segment, api-contract 3) and a path. */
export function endpoint(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
