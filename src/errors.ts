/**
 * A start that cannot go on, for a reason its message says whole (a configuration value, the data
 * directory in use, the database out of reach): its stack is the message alone, so the trace main.ts
 * prints adds nothing an operator must read past.
 */
export class StartRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
    this.stack = `${this.name}: ${this.message}`;
  }
}

/**
 * Every failure a client can see, in one place. Services throw these; the HTTP error handler
 * (src/http/error-handler.ts) turns them into `{detail}` bodies with the status given here.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly extra: Record<string, unknown> | undefined;

  constructor(status: number, code: string, detail: string, extra?: Record<string, unknown>) {
    super(detail);
    this.status = status;
    this.code = code;
    this.extra = extra;
  }
}

export class BadRequestError extends AppError {
  constructor(detail: string, extra?: Record<string, unknown>) {
    super(400, 'bad_request', detail, extra);
  }
}

export class UnauthorizedError extends AppError {
  constructor(detail = 'Authentication required') {
    super(401, 'unauthorized', detail);
  }
}

export class ForbiddenError extends AppError {
  constructor(detail: string) {
    super(403, 'forbidden', detail);
  }
}

export class MissingScopeError extends ForbiddenError {
  constructor(scope: string) {
    super(`API key missing required scope: ${scope}`);
  }
}

export class PinnedKeyError extends ForbiddenError {
  constructor(collection: string) {
    super(`API key is pinned to collection ${collection}`);
  }
}

/** A key whose pinned collection was deleted: a collection created later under its name is another. */
export class PinnedCollectionDeletedError extends ForbiddenError {
  constructor(collection: string) {
    super(`API key is pinned to collection ${collection}, which was deleted`);
  }
}

export class NotFoundError extends AppError {
  constructor(detail: string) {
    super(404, 'not_found', detail);
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(detail: string) {
    super(405, 'method_not_allowed', detail);
  }
}

export class ConflictError extends AppError {
  constructor(detail: string) {
    super(409, 'conflict', detail);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(detail: string) {
    super(413, 'payload_too_large', detail);
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(detail: string) {
    super(415, 'unsupported_media_type', detail);
  }
}

export class UnprocessableError extends AppError {
  constructor(detail: string) {
    super(422, 'unprocessable', detail);
  }
}

/** The disk the service writes to is (nearly) full: nothing more is taken until space is freed (MIN_FREE_DISK_MB). */
export class InsufficientStorageError extends AppError {
  constructor(detail: string) {
    super(507, 'insufficient_storage', detail);
  }
}

export class ServiceUnavailableError extends AppError {
  constructor(detail: string) {
    super(503, 'unavailable', detail);
  }
}

/**
 * A model provider (embeddings, reranking) refused or failed a call. `detail` is the provider's own
 * message with any API key removed; `retryable` says whether trying later may succeed (429, 5xx,
 * timeouts) or not (a bad key, a bad request); `retryAfterMs` is how long the provider asked to be
 * left alone (Retry-After), when it said.
 */
export class ProviderError extends AppError {
  constructor(detail: string, readonly retryable: boolean, readonly retryAfterMs?: number) {
    super(502, 'provider_error', detail);
  }
}
