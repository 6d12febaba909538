import { createHash, randomBytes } from 'node:crypto';

/** 32 random bytes, URL-safe: session cookies, API keys, webhook secrets. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function sha256Hex(value: string | Buffer): string {
  return createHash('sha256').update(value).digest('hex');
}
