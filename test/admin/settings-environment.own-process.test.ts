/**
 * Instance settings set by environment (upper-case name): shown with source `environment`, a value
 * an admin saves wins over them, a reset goes back to them. A value the setting does not take stops
 * the start, naming the variable, instead of being replaced by the default unseen.
 */
import t from 'tap';
import { ConfigError } from '../../src/config.js';
import { SETTINGS_BY_KEY, settingFromEnvironment } from '../../src/settings/setting-definitions.js';
import { SettingsService } from '../../src/settings/settings.service.js';
import { ADMIN, adminTestApp, testBackends } from '../support/test-app.js';

interface SettingView { key: string; value: unknown; source: string }

// This file runs in its own process: the variables are read when the test apps are built.
process.env.QUERY_CACHE_TTL_S = '7';
process.env.EMBEDDING_CACHE_ENABLED = 'FALSE';
process.env.SESSION_COOKIE_SAMESITE = 'strict';

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    const settings = async () => {
      const response = await app.inject({ url: '/v1/admin/settings', headers: admin });
      t.equal(response.statusCode, 200, response.body);
      return new Map((response.json().data as SettingView[]).map((setting) => [setting.key, setting]));
    };

    await t.test('values from the environment, with their source', async (t) => {
      const shown = await settings();
      t.match(shown.get('query_cache_ttl_s'), { value: 7, source: 'environment' });
      t.match(shown.get('embedding_cache_enabled'), { value: false, source: 'environment' }, 'a boolean in any case');
      t.match(shown.get('session_cookie_samesite'), { value: 'strict', source: 'environment' });
      t.match(shown.get('webhook_timeout_ms'), { value: 10000, source: 'default' }, 'an unset one keeps its default');
    });

    await t.test('the environment applies: the login cookie is SameSite=Strict', async (t) => {
      const login = await app.inject({ method: 'POST', url: '/v1/auth/login', payload: ADMIN });
      t.equal(login.statusCode, 200, login.body);
      t.match(String(login.headers['set-cookie']), /SameSite=Strict/);
    });

    await t.test('a saved value wins; a reset goes back to the environment', async (t) => {
      const saved = await app.inject({ method: 'PATCH', url: '/v1/admin/settings', headers: admin, payload: { values: { query_cache_ttl_s: 9 } } });
      t.equal(saved.statusCode, 200, saved.body);
      t.match((await settings()).get('query_cache_ttl_s'), { value: 9, source: 'database' });
      const reset = await app.inject({ method: 'POST', url: '/v1/admin/settings/reset', headers: admin, payload: { keys: ['query_cache_ttl_s'] } });
      t.equal(reset.statusCode, 200, reset.body);
      t.match((await settings()).get('query_cache_ttl_s'), { value: 7, source: 'environment' });
    });

    await t.test('a chunk variable that cannot pair with the saved default stops the start', async (t) => {
      const saved = await app.inject({ method: 'PATCH', url: '/v1/admin/settings', headers: admin, payload: { values: { default_chunk_size: 300 } } });
      t.equal(saved.statusCode, 200, saved.body);
      t.teardown(() => app.inject({ method: 'POST', url: '/v1/admin/settings/reset', headers: admin, payload: { keys: ['default_chunk_size'] } }));
      // As services.ts starts: the variables are read, then what is saved, which wins over them.
      const start = async (env: Record<string, string>) => {
        const starting = new SettingsService(services.db.fork, env);
        await starting.load();
        return starting;
      };
      // 500 pairs with the default size (800), not with the size saved.
      const refused = await start({ DEFAULT_CHUNK_OVERLAP: '500' }).then(() => undefined, (error: unknown) => error);
      t.ok(refused instanceof ConfigError, 'a ConfigError');
      t.equal((refused as Error | undefined)?.message, 'DEFAULT_CHUNK_OVERLAP (500) must be smaller than default_chunk_size (300, saved by an admin, '
        + 'which wins over DEFAULT_CHUNK_SIZE): set the variable to a value that fits, or start without it and change the saved setting first');
      const started = await start({ DEFAULT_CHUNK_OVERLAP: '200' });
      t.same([await started.get('default_chunk_size'), await started.get('default_chunk_overlap')], [300, 200], 'one that fits starts');
    });
  });
}

t.test('a value the setting does not take stops the start, naming the variable', async (t) => {
  const unused = () => { throw new Error('the database is not read when the environment is refused'); };
  const refused: Array<[Record<string, string>, RegExp]> = [
    [{ QUERY_CACHE_TTL_S: 'sixty' }, /^QUERY_CACHE_TTL_S: query_cache_ttl_s must be an integer, got "sixty"$/],
    [{ QUERY_CACHE_TTL_S: '1.5' }, /QUERY_CACHE_TTL_S.*integer.*"1\.5"/],
    [{ QUERY_CACHE_TTL_S: '-1' }, /QUERY_CACHE_TTL_S.*between 0 and 86400.*"-1"/],
    [{ EMBEDDING_CACHE_ENABLED: 'yes' }, /EMBEDDING_CACHE_ENABLED.*true or false.*"yes"/],
    [{ SESSION_COOKIE_SAMESITE: 'loose' }, /SESSION_COOKIE_SAMESITE.*lax, strict, none.*"loose"/],
    [{ SESSION_COOKIE_NAME: 'a b' }, /SESSION_COOKIE_NAME.*not allowed.*"a b"/],
    // Each a good value alone, but every create without a chunk size would fail (400) for the pair.
    [{ DEFAULT_CHUNK_OVERLAP: '900' }, /^DEFAULT_CHUNK_OVERLAP \(900\) must be smaller than DEFAULT_CHUNK_SIZE \(unset: the default, 800\)$/],
    [{ DEFAULT_CHUNK_SIZE: '50' }, /^DEFAULT_CHUNK_OVERLAP \(unset: the default, 100\) must be smaller than DEFAULT_CHUNK_SIZE \(50\)$/],
    [{ DEFAULT_CHUNK_SIZE: '500', DEFAULT_CHUNK_OVERLAP: '500' }, /^DEFAULT_CHUNK_OVERLAP \(500\) must be smaller than DEFAULT_CHUNK_SIZE \(500\)$/],
  ];
  for (const [env, message] of refused) {
    const error = (() => {
      try {
        new SettingsService(unused, env);
        return undefined;
      } catch (thrown) {
        return thrown;
      }
    })();
    t.ok(error instanceof ConfigError, `${JSON.stringify(env)}: a ConfigError`);
    t.match((error as Error | undefined)?.message, message);
  }
  t.doesNotThrow(() => new SettingsService(unused, { QUERY_CACHE_TTL_S: ' 0 ', EMBEDDING_CACHE_ENABLED: '1', SESSION_COOKIE_SECURE: '' }), 'zero, 1 and an empty value (unset) are accepted');
  t.doesNotThrow(() => new SettingsService(unused, { DEFAULT_CHUNK_SIZE: '1000', DEFAULT_CHUNK_OVERLAP: '900' }), 'an overlap above the default size, under the size set with it');
  const cacheEnabled = SETTINGS_BY_KEY.get('embedding_cache_enabled')!;
  const words = ['0', '1', 'false', ' TRUE '];
  t.same(words.map((raw) => settingFromEnvironment(cacheEnabled, { EMBEDDING_CACHE_ENABLED: raw })), [false, true, false, true], 'a boolean from 0, 1, false, true');
});
