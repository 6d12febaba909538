/**
 * PASSWORD_HASH_MEMORY_KIB, PASSWORD_HASH_ITERATIONS and PASSWORD_HASH_PARALLELISM set argon2id's
 * cost of passwords stored from then on. A hash records its own cost, so passwords stored at
 * another one still log in, and the login stores them again at the configured cost.
 */
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { assertError } from '../support/assertions.js';
import { ADMIN, restartableTestApp, setupAdmin, testBackends, type TestApp } from '../support/test-app.js';

const LOW = { memoryKib: 64, iterations: 1, parallelism: 1 };
const HIGHER = { memoryKib: 128, iterations: 2, parallelism: 2 };

t.test('the cost is argon2\'s default unless set, and a value argon2 cannot take is refused, naming the variable', async (t) => {
  t.same(loadConfig({}).passwordHashCost, { memoryKib: 65_536, iterations: 3, parallelism: 4 });
  t.same(loadConfig({ PASSWORD_HASH_MEMORY_KIB: '19456', PASSWORD_HASH_ITERATIONS: '2', PASSWORD_HASH_PARALLELISM: '1' }).passwordHashCost, { memoryKib: 19_456, iterations: 2, parallelism: 1 }, 'OWASP\'s first choice');
  const refused: Array<[Record<string, string>, RegExp]> = [
    [{ PASSWORD_HASH_MEMORY_KIB: '16' }, /^PASSWORD_HASH_MEMORY_KIB must be an integer from 32 to 4194304, got "16"$/],
    [{ PASSWORD_HASH_MEMORY_KIB: '8', PASSWORD_HASH_PARALLELISM: '2' }, /^PASSWORD_HASH_MEMORY_KIB must be an integer from 16 to 4194304, got "8"$/],
    [{ PASSWORD_HASH_MEMORY_KIB: '64MB' }, /^PASSWORD_HASH_MEMORY_KIB must be an integer/],
    [{ PASSWORD_HASH_ITERATIONS: '0' }, /^PASSWORD_HASH_ITERATIONS must be an integer from 1 to 100, got "0"$/],
    [{ PASSWORD_HASH_PARALLELISM: '0' }, /^PASSWORD_HASH_PARALLELISM must be an integer from 1 to 16, got "0"$/],
  ];
  for (const [env, message] of refused) {
    t.throws(() => loadConfig(env), message, JSON.stringify(env));
    t.throws(() => loadConfig(env), ConfigError);
  }
});

for (const backend of testBackends()) {
  t.test(`${backend}: passwords are stored at the configured cost; a login stores one of another cost again`, async (t) => {
    const server = await restartableTestApp(t, backend, 'rs-password-cost-');
    const storedHash = async (app: TestApp) =>
      (await app.services.sql<{ password_hash: string }>('select password_hash from users where email = ?', [ADMIN.email]))[0]!.password_hash;
    const login = (app: TestApp, password: string) => app.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: ADMIN.email, password } });

    const first = await server.restart({ passwordHashCost: LOW });
    await setupAdmin(first.app);
    const lowHash = await storedHash(first);
    t.match(lowHash, /^\$argon2id\$v=19\$m=64,t=1,p=1\$/, 'setup stores the password at the configured cost');

    const second = await server.restart({ passwordHashCost: HIGHER });
    assertError(t, await login(second, 'not the password'), 401, 'Invalid email or password');
    t.equal(await storedHash(second), lowHash, 'a failed login stores nothing');
    t.equal((await login(second, ADMIN.password)).statusCode, 200, 'a password stored at the old cost still logs in');
    const higherHash = await storedHash(second);
    t.match(higherHash, /^\$argon2id\$v=19\$m=128,t=2,p=2\$/, 'and is stored again at the new one');
    t.equal((await login(second, ADMIN.password)).statusCode, 200, 'which logs in');
    t.equal(await storedHash(second), higherHash, 'and is not stored again');

    const cookie = (await login(second, ADMIN.password)).cookies.find((cookie) => cookie.name === 'svc_session')!;
    const created = await second.app.inject({
      method: 'POST', url: '/v1/admin/users', headers: { cookie: `${cookie.name}=${cookie.value}` },
      payload: { email: 'member@example.com', password: 'member passphrase', role: 'viewer' },
    });
    t.equal(created.statusCode, 201, created.body);
    const [member] = await second.services.sql<{ password_hash: string }>('select password_hash from users where email = ?', ['member@example.com']);
    t.match(member!.password_hash, /^\$argon2id\$v=19\$m=128,t=2,p=2\$/, 'a user an admin creates is stored at the configured cost');
  });
}
