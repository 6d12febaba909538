import argon2 from 'argon2';
import type { PasswordHashCost } from '../config.js';
import { BadRequestError } from '../errors.js';

export const MIN_PASSWORD_LENGTH = 8;

/** Characters are code points: "😀😀😀😀" is 4 of them, though 8 UTF-16 units (and passed as 8). */
export function assertPasswordPolicy(password: string, field = 'password'): void {
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    throw new BadRequestError(`${field} must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
}

/** Argon2id hashes at the configured cost (PASSWORD_HASH_*); a hash records its own cost, so any verifies. */
export class PasswordHasher {
  private readonly options: { type: typeof argon2.argon2id; memoryCost: number; timeCost: number; parallelism: number };
  /**
   * A hash of a password nobody has, verified when a login names an unknown email, so that the
   * response time does not tell which emails exist. It is made at the configured cost, as the
   * users' hashes are.
   */
  private decoyHash: Promise<string> | undefined;

  constructor(cost: PasswordHashCost) {
    this.options = { type: argon2.argon2id, memoryCost: cost.memoryKib, timeCost: cost.iterations, parallelism: cost.parallelism };
  }

  hash(password: string): Promise<string> {
    return argon2.hash(password, this.options);
  }

  async verify(hash: string, password: string): Promise<boolean> {
    try {
      return await argon2.verify(hash, password);
    } catch {
      return false;
    }
  }

  /** Whether `hash` was made at another cost than the configured one (so a login stores it again). */
  isOfAnotherCost(hash: string): boolean {
    try {
      return argon2.needsRehash(hash, this.options);
    } catch {
      return false;
    }
  }

  async verifyAgainstDecoy(password: string): Promise<false> {
    this.decoyHash ??= this.hash('decoy-password-for-timing');
    await this.verify(await this.decoyHash, password);
    return false;
  }
}
