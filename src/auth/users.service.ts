import { randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { recordAudit } from '../audit/audit.service.js';
import { User, USER_ROLES, type UserRecord, type UserRole } from '../db/entities/index.js';
import { BadRequestError, ConflictError, NotFoundError, UnauthorizedError } from '../errors.js';
import type { Actor } from './actor.js';
import { assertPasswordPolicy, type PasswordHasher } from './passwords.js';
import { revokeUserSessions } from './sessions.service.js';

const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+$/;
/** Serialises first-run setup across requests and replicas. */
const SETUP_LOCK_ID = 7_361_001;
/** Serialises changes that could remove the last admin (two admins demoting each other at once). */
const ADMIN_CHANGE_LOCK_ID = 7_361_002;
/** The unique index on users (lower(email)), migration 0001. */
const EMAIL_UNIQUE_INDEX = 'users_email_unique';

async function lockAdminChanges(em: EntityManager): Promise<void> {
  await em.getConnection().execute('select pg_advisory_xact_lock(?)', [ADMIN_CHANGE_LOCK_ID], 'all', em.getTransactionContext());
}

export interface NewUserInput {
  email: string;
  password: string;
  display_name?: string | null | undefined;
  role?: string | undefined;
}

export interface UserUpdateInput {
  email?: string | undefined;
  password?: string | undefined;
  display_name?: string | null | undefined;
  role?: string | undefined;
}

function normaliseEmail(email: string): string {
  const trimmed = email.trim();
  if (!EMAIL_PATTERN.test(trimmed) || trimmed.length > 320) throw new BadRequestError('email must be a valid email address');
  return trimmed.toLowerCase();
}

function checkRole(role: string | undefined): UserRole | undefined {
  if (role === undefined) return undefined;
  if (!(USER_ROLES as readonly string[]).includes(role)) throw new BadRequestError(`role must be one of ${USER_ROLES.join(', ')}`);
  return role as UserRole;
}

function emailTaken(email: string): ConflictError {
  return new ConflictError(`A user with email ${email} already exists`);
}

/** The quick answer; only the unique index can tell of a request that commits the same email meanwhile. */
async function assertEmailFree(em: EntityManager, email: string, exceptId?: string): Promise<void> {
  const existing = await em.findOne(User, { email });
  if (existing && existing.id !== exceptId) throw emailTaken(email);
}

/**
 * Runs a write that stores `email` and answers a 409 when the unique index refuses it: two requests
 * that both passed assertEmailFree (createUser hashes for ~110 ms between its look and its insert)
 * then get the answer of the sequential case, not a 500. Other violations stay what they are.
 */
async function claimingEmail<T>(email: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException && (error as { constraint?: unknown }).constraint === EMAIL_UNIQUE_INDEX) throw emailTaken(email);
    throw error;
  }
}

export async function needsSetup(em: EntityManager): Promise<boolean> {
  return (await em.count(User, {})) === 0;
}

/** Setup is a first-run operation: once any user exists every call is a 409, whatever it carries. */
export async function assertSetupPending(em: EntityManager): Promise<void> {
  if (!(await needsSetup(em))) throw new ConflictError('Setup has already been completed');
}

/** Creates the first admin; 409 once any user exists, also when two setups race. */
export async function setupFirstAdmin(em: EntityManager, passwords: PasswordHasher, input: NewUserInput): Promise<UserRecord> {
  const email = normaliseEmail(input.email);
  assertPasswordPolicy(input.password);
  // Hash outside the transaction: PGlite has one connection, and argon2 takes ~110 ms.
  const passwordHash = await passwords.hash(input.password);
  return em.transactional(async (tx) => {
    await tx.getConnection().execute('select pg_advisory_xact_lock(?)', [SETUP_LOCK_ID], 'all', tx.getTransactionContext());
    await assertSetupPending(tx);
    const user = newUser(tx, email, passwordHash, input.display_name ?? null, 'admin');
    recordAudit(tx, null, { action: 'auth.setup', resourceType: 'user', resourceId: user.id, details: { email } });
    return user;
  });
}

function newUser(em: EntityManager, email: string, passwordHash: string, displayName: string | null, role: UserRole): UserRecord {
  const now = new Date();
  return em.create(User, {
    id: randomUUID(), email, passwordHash, displayName, role,
    preferences: {}, chatOpenaiKeySealed: null, createdAt: now, updatedAt: now,
  });
}

/**
 * A password stored at another cost than PASSWORD_HASH_* says (the setting was raised, or lowered)
 * is stored again at that cost once it is known to be right: the only moment the service has it.
 */
export async function authenticateUser(em: EntityManager, passwords: PasswordHasher, emailInput: string, password: string): Promise<UserRecord> {
  const user = await em.findOne(User, { email: emailInput.trim().toLowerCase() });
  const valid = user ? await passwords.verify(user.passwordHash, password) : await passwords.verifyAgainstDecoy(password);
  if (!user || !valid) throw new UnauthorizedError('Invalid email or password');
  if (passwords.isOfAnotherCost(user.passwordHash)) {
    const verified = user.passwordHash;
    const rehashed = await passwords.hash(password);
    // Only over the hash just verified: a password changed meanwhile stays changed.
    await em.nativeUpdate(User, { id: user.id, passwordHash: verified }, { passwordHash: rehashed });
  }
  return user;
}

export async function createUser(em: EntityManager, passwords: PasswordHasher, actor: Actor, input: NewUserInput): Promise<UserRecord> {
  const email = normaliseEmail(input.email);
  assertPasswordPolicy(input.password);
  const role = checkRole(input.role) ?? 'admin';
  await assertEmailFree(em, email);
  const user = newUser(em, email, await passwords.hash(input.password), input.display_name ?? null, role);
  recordAudit(em, actor, { action: 'user.create', resourceType: 'user', resourceId: user.id, details: { email, role } });
  await claimingEmail(email, () => em.flush());
  return user;
}

export async function getUser(em: EntityManager, id: string): Promise<UserRecord> {
  const user = await em.findOne(User, { id });
  if (!user) throw new NotFoundError(`User ${id} not found`);
  return user;
}

export async function listUsers(em: EntityManager, limit: number, offset: number): Promise<{ data: UserRecord[]; total: number }> {
  const [data, total] = await em.findAndCount(User, {}, { orderBy: { createdAt: 'asc', id: 'asc' }, limit, offset });
  return { data, total };
}

async function assertAnotherAdminRemains(em: EntityManager, user: UserRecord): Promise<void> {
  if (user.role !== 'admin') return;
  const admins = await em.count(User, { role: 'admin', id: { $ne: user.id } });
  if (admins === 0) throw new ConflictError('The last admin cannot be removed or demoted');
}

export async function updateUser(em: EntityManager, passwords: PasswordHasher, actor: Actor, id: string, input: UserUpdateInput): Promise<UserRecord> {
  const role = checkRole(input.role);
  const email = input.email === undefined ? undefined : normaliseEmail(input.email);
  if (input.password !== undefined) assertPasswordPolicy(input.password);
  // Hash before the transaction: PGlite has one connection, and argon2 takes ~110 ms.
  const passwordHash = input.password !== undefined ? await passwords.hash(input.password) : undefined;
  const update = () => em.transactional(async (tx) => {
    await lockAdminChanges(tx);
    const user = await getUser(tx, id);
    if (email !== undefined) {
      await assertEmailFree(tx, email, id);
      user.email = email;
    }
    if (input.display_name !== undefined) user.displayName = input.display_name;
    if (role !== undefined && role !== user.role) {
      if (role !== 'admin') await assertAnotherAdminRemains(tx, user);
      user.role = role;
    }
    if (passwordHash !== undefined) {
      user.passwordHash = passwordHash;
      // An admin resetting someone's password signs that user out everywhere.
      await revokeUserSessions(tx, id);
    }
    user.updatedAt = new Date();
    recordAudit(tx, actor, { action: 'user.update', resourceType: 'user', resourceId: id, details: { fields: Object.keys(input) } });
    return user;
  });
  // The admin-change lock does not cover createUser, which may insert the same email meanwhile.
  return email === undefined ? update() : claimingEmail(email, update);
}

export async function deleteUser(em: EntityManager, actor: Actor, id: string): Promise<void> {
  await em.transactional(async (tx) => {
    await lockAdminChanges(tx);
    const user = await getUser(tx, id);
    await assertAnotherAdminRemains(tx, user);
    tx.remove(user);
    recordAudit(tx, actor, { action: 'user.delete', resourceType: 'user', resourceId: id, details: { email: user.email } });
  });
}

/** Verifies the current password, stores the new one and revokes every session of the user. */
export async function changePassword(em: EntityManager, passwords: PasswordHasher, actor: Actor & { kind: 'user' }, currentPassword: string, newPassword: string): Promise<UserRecord> {
  const user = await getUser(em, actor.userId);
  assertPasswordPolicy(newPassword, 'new_password');
  if (!(await passwords.verify(user.passwordHash, currentPassword))) throw new BadRequestError('current_password is incorrect');
  user.passwordHash = await passwords.hash(newPassword);
  user.updatedAt = new Date();
  recordAudit(em, actor, { action: 'auth.password_change', resourceType: 'user', resourceId: user.id });
  await em.flush();
  await revokeUserSessions(em, user.id);
  return user;
}

export function serializeUser(user: UserRecord) {
  return {
    id: user.id,
    email: user.email,
    display_name: user.displayName,
    role: user.role,
    created_at: user.createdAt.toISOString(),
    updated_at: user.updatedAt.toISOString(),
  };
}
