/** Node's codes for a request that could not reach its server or lost it: refused, reset, timed out, no such host. */
const NETWORK_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

/** Whether `code` (an error's `code`) says the network failed, rather than the server's answer. */
export function isNetworkErrorCode(code: unknown): boolean {
  return typeof code === 'string' && NETWORK_ERROR_CODES.has(code);
}
