import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends } from '../support/test-app.js';
import { assertError } from '../support/assertions.js';

// With backtracking, "^(a+)+$" on n a's and a "!" takes ~2^n steps: 28 a's held the process 2 s,
// 30 a's 160 s, so 40 would take days. No timing is asserted: the test only ends because the
// pattern runs in linear time.
const CATASTROPHIC = '^(a+)+$';
const HOURS_OF_BACKTRACKING = `${'a'.repeat(40)}!`;
const EMBEDDING = [0.1, 0.2, 0.3, 0.4];

for (const backend of testBackends()) {
  t.test(backend, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    const create = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/v1/collections', headers: admin, payload });
    const get = (name: string) => app.inject({ url: `/v1/collections/${name}`, headers: admin });
    const patch = (name: string, payload: Record<string, unknown>) => app.inject({ method: 'PATCH', url: `/v1/collections/${name}`, headers: admin, payload });
    const upsert = (name: string, metadata: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: `/v1/collections/${name}/vectors/upsert`, headers: admin, payload: { vectors: [{ id: 'v1', embedding: EMBEDDING, text: 'a vector', metadata }] } });
    const upload = (name: string, metadata: Record<string, unknown>) => {
      const body = multipartUpload([{ filename: 'a.txt', content: 'some text', contentType: 'text/plain' }], { metadata: JSON.stringify(metadata) });
      return app.inject({ method: 'POST', url: `/v1/collections/${name}/documents`, headers: { ...admin, ...body.headers }, payload: body.payload });
    };
    const schemaWith = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'object', properties, ...extra });

    await t.test('a backtracking pattern runs in linear time: upsert and upload answer, naming the field', async (t) => {
      const schemas = {
        pattern: schemaWith({ a: { type: 'string', pattern: CATASTROPHIC } }),
        patternProperties: schemaWith({}, { patternProperties: { [CATASTROPHIC]: { type: 'number' } } }),
        propertyNames: schemaWith({}, { propertyNames: { pattern: CATASTROPHIC } }),
      };
      for (const [keyword, metadata_schema] of Object.entries(schemas)) {
        await createTestCollection(app, admin, { name: `slow-${keyword}`, dimension: 4, metadata_schema });
      }
      assertError(t, await upsert('slow-pattern', { a: HOURS_OF_BACKTRACKING }), 400, /vectors\[0\]\.metadata\.a must match pattern/, 'pattern, upsert');
      assertError(t, await upload('slow-pattern', { a: HOURS_OF_BACKTRACKING }), 400, /metadata\.a must match pattern/, 'pattern, upload');
      // A property name matching the pattern must hold a number: a string is refused.
      assertError(t, await upsert('slow-patternProperties', { [`${'a'.repeat(40)}`]: 'text', [HOURS_OF_BACKTRACKING]: 1 }), 400, /must be number/, 'patternProperties, upsert');
      assertError(t, await upload('slow-propertyNames', { [HOURS_OF_BACKTRACKING]: 1 }), 400, /property name must be valid/, 'propertyNames, upload');
      t.equal((await upsert('slow-pattern', { a: 'aaaa' })).statusCode, 200, 'a matching value is accepted');
    });

    await t.test('a pattern RE2 cannot run (backreference, lookahead): 400 at create and PATCH, nothing written', async (t) => {
      for (const [what, pattern] of [['backreference', '^(a)\\1$'], ['lookahead', '^(?=a)a$']] as const) {
        const response = await create({ name: 'backref', metadata_schema: schemaWith({ a: { type: 'string', pattern } }) });
        assertError(t, response, 400, /^metadata_schema is refused: pattern ".*" is not supported: .*linear-time engine, RE2, which has no backreferences or lookaround/, `${what} at create`);
        t.match(response.json().detail, JSON.stringify(pattern), `${what}: the detail names the pattern`);
      }
      t.equal((await get('backref')).statusCode, 404, 'no collection was created');
      const kept = schemaWith({ a: { type: 'string' } });
      await createTestCollection(app, admin, { name: 'patched', metadata_schema: kept });
      const refused = await patch('patched', { metadata_schema: schemaWith({ a: { type: 'string', pattern: '(x)\\1' } }), description: 'changed' });
      assertError(t, refused, 400, /^metadata_schema is refused: pattern "\(x\)\\\\1" is not supported/, 'backreference at PATCH');
      t.match((await get('patched')).json(), { metadata_schema: kept, description: null }, 'the collection is unchanged');
    });

    await t.test('an enum listing a value twice, objects in either key order: 400 at create, nothing created', async (t) => {
      const twice = { scalar: ['red', 'red'], object: [{ a: 1, b: [2, { c: 3, d: 4 }] }, { b: [2, { d: 4, c: 3 }], a: 1 }] };
      for (const [what, values] of Object.entries(twice)) {
        const response = await create({ name: 'twice', metadata_schema: schemaWith({ a: { enum: values } }) });
        assertError(t, response, 400, /^metadata_schema is not a valid JSON Schema: .*enum must NOT have duplicate items/, what);
      }
      t.equal((await get('twice')).statusCode, 404, 'no collection');
      const distinct = [{ a: 1, b: [2, { c: 3, d: 4 }] }, { a: 1, b: [{ c: 3, d: 4 }, 2] }];
      t.equal((await create({ name: 'twice', metadata_schema: schemaWith({ a: { enum: distinct } }) })).statusCode, 201, 'the same items in another order are another value');
    });

    await t.test('a $ref that resolves to nothing: 400 at create, nothing created', async (t) => {
      for (const [what, ref] of [['a missing definition', '#/definitions/nope'], ['another document', 'https://example.com/schema.json']]) {
        const response = await create({ name: 'unresolved', metadata_schema: schemaWith({ a: { $ref: ref } }) });
        assertError(t, response, 400, new RegExp(`^metadata_schema is not a valid JSON Schema: can't resolve reference ${ref.replace(/[.#/]/g, '\\$&')}`), what);
      }
      t.equal((await get('unresolved')).statusCode, 404, 'no collection');
    });

    await t.test('uniqueItems: refused unless items are typed as scalars, then enforced', async (t) => {
      const quadratic = {
        'objects': { type: 'array', uniqueItems: true, items: { type: 'object' } },
        'no items': { type: 'array', uniqueItems: true },
        'an untyped enum': { type: 'array', uniqueItems: true, items: { enum: ['x', 'y'] } },
        'scalars or arrays': { type: 'array', uniqueItems: true, items: { type: ['string', 'array'] } },
      };
      for (const [what, tags] of Object.entries(quadratic)) {
        assertError(t, await create({ name: 'unique', metadata_schema: schemaWith({ tags }) }), 400, /^metadata_schema is refused: uniqueItems at #\/properties\/tags needs "items" with a "type" of scalars only/, `${what} at create`);
      }
      t.equal((await get('unique')).statusCode, 404, 'no collection was created');
      await createTestCollection(app, admin, { name: 'unique', metadata_schema: schemaWith({}) });
      assertError(t, await patch('unique', { metadata_schema: schemaWith({ tags: quadratic.objects }) }), 400, /uniqueItems/, 'objects at PATCH');
      t.same((await get('unique')).json().metadata_schema, schemaWith({}), 'the schema is unchanged');

      const strings = { type: 'array', uniqueItems: true, items: { type: 'string' } };
      t.equal((await patch('unique', { metadata_schema: schemaWith({ tags: strings }) })).statusCode, 200, 'strings are accepted');
      assertError(t, await upload('unique', { tags: ['x', 'y', 'x'] }), 400, /metadata\.tags must NOT have duplicate items/, 'duplicate strings on upload');
      t.equal((await upload('unique', { tags: ['x', 'y'] })).statusCode, 202, 'distinct strings are accepted');
    });

    await t.test('format: enforced; an unknown format refused at create', async (t) => {
      await createTestCollection(app, admin, { name: 'formats', dimension: 4, metadata_schema: schemaWith({ contact: { type: 'string', format: 'email' } }) });
      assertError(t, await upsert('formats', { contact: 'notmail' }), 400, /metadata\.contact must match format "email"/, 'not an email, upsert');
      assertError(t, await upload('formats', { contact: 'notmail' }), 400, /metadata\.contact must match format "email"/, 'not an email, upload');
      t.equal((await upsert('formats', { contact: 'keeper@example.com' })).statusCode, 200, 'an email is accepted');
      const unknown = await create({ name: 'unknown-format', metadata_schema: schemaWith({ a: { type: 'string', format: 'postcode' } }) });
      assertError(t, unknown, 400, /^metadata_schema is refused: unknown format "postcode" at #\/properties\/a/, 'unknown format');
      t.equal((await get('unknown-format')).statusCode, 404, 'no collection was created');
    });

    await t.test('a schema stored before these rules: uploads get 409 asking for a PATCH, and the PATCH fixes it', async (t) => {
      const old = await createTestCollection(app, admin, { name: 'stored-before', dimension: 4, metadata_schema: schemaWith({}) });
      // As an older version stored it: straight to the database, then dropped from this process's cache.
      await services.sql('update collections set metadata_schema = ?::jsonb where id = ?', [JSON.stringify(schemaWith({ a: { type: 'string', pattern: '(a)\\1' } })), old.id]);
      services.collections.forget(old.id);
      assertError(t, await upsert('stored-before', { a: 'aa' }), 409, /^collection stored-before cannot check metadata until its metadata_schema is updated \(PATCH \/v1\/collections\/stored-before\): stored before the current rules, its metadata_schema is refused: pattern/, 'upsert');
      t.equal((await patch('stored-before', { metadata_schema: schemaWith({ a: { type: 'string', pattern: '^a+$' } }) })).statusCode, 200);
      t.equal((await upsert('stored-before', { a: 'aa' })).statusCode, 200, 'fixed by PATCH');
    });
  });
}
