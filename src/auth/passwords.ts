import argon2 from 'argon2';
import { BadRequestError } from '../errors.js';

export const MIN_PASSWORD_LENGTH = 8;

/** Characters are code points: "😀😀😀😀" is 4 of them, though 8 UTF-16 units (and passed as 8). */
export function assertPasswordPolicy(password: string, field = 'password'): void {
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    throw new BadRequestError(`${field} must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
}

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, { type: argon2.argon2id });
}

export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}

/**
 * A hash of a password nobody has, verified when a login names an unknown email, so that the
 * response time does not tell which emails exist (argon2id costs ~110 ms here).
 */
let decoyHash: Promise<string> | undefined;
export async function verifyAgainstDecoy(password: string): Promise<false> {
  decoyHash ??= hashPassword('decoy-password-for-timing');
  await verifyPassword(await decoyHash, password);
  return false;
}
