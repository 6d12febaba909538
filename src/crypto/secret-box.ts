import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Seals secrets at rest with AES-256-GCM under MASTER_KEY. Without a master key the value is
 * stored with a `plain:` marker (api-contract 4: "secrets stored, warning logged"), so that
 * configuring a key later still reads old values, and re-saving them encrypts them.
 */
export class SecretBox {
  private readonly key: Buffer | undefined;
  private readonly digestKey: Buffer | undefined;

  constructor(masterKey: string | undefined) {
    // Any string works as a master key: SHA-256 turns it into the 32 bytes AES-256 needs.
    this.key = masterKey ? createHash('sha256').update(masterKey, 'utf8').digest() : undefined;
    this.digestKey = this.key ? Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), 'stored request digests', 32)) : undefined;
  }

  /**
   * A hex digest of a value kept only to be compared later (a request body that may hold a
   * password). Under MASTER_KEY it is an HMAC, which a copy of the database alone cannot test
   * guesses against; a plain SHA-256 can be, at GPU speed. Without a key, SHA-256 (like the
   * secrets themselves, stored unencrypted then).
   */
  digest(value: string): string {
    return this.digestKey ? createHmac('sha256', this.digestKey).update(value, 'utf8').digest('hex') : createHash('sha256').update(value, 'utf8').digest('hex');
  }

  get encrypts(): boolean {
    return this.key !== undefined;
  }

  seal(plaintext: string): string {
    if (!this.key) return `plain:${Buffer.from(plaintext, 'utf8').toString('base64')}`;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
  }

  open(sealed: string): string {
    if (sealed.startsWith('plain:')) return Buffer.from(sealed.slice(6), 'base64').toString('utf8');
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unrecognised sealed secret');
    if (!this.key) throw new Error('a secret was sealed with MASTER_KEY, but MASTER_KEY is not set');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }
}
