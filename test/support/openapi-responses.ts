/**
 * Checks real answers against the OpenAPI document the app serves: the documented success body
 * of the route (`config.openapi.response`) must validate the body the route answered, so the
 * document cannot drift from what clients get.
 */
import { Ajv } from 'ajv';
import type { Test } from 'tap';
import type { App } from '../../src/app.js';
import { addFormats } from '../../src/http/validation.js';

interface Answer {
  statusCode: number;
  body: string;
  json(): unknown;
}

/** JSON Pointer escaping of one path segment. */
const pointerSegment = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

export async function documentedResponses(app: App) {
  const document = (await app.inject({ url: '/docs/json' })).json() as { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>> };
  const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
  ajv.addSchema(document, 'openapi');
  // A path with fewer parameters wins: /documents/batch before /documents/{id}.
  const templates = Object.keys(document.paths)
    .map((path) => ({ path, parameters: (path.match(/\{/g) ?? []).length, pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }))
    .sort((left, right) => left.parameters - right.parameters);

  /** Asserts that the answer's status is documented for the route and its body matches the documented schema. */
  return function assertDocumented(t: Test, method: string, url: string, answer: Answer): void {
    const path = url.split('?')[0]!;
    const template = templates.find((candidate) => candidate.pattern.test(path))?.path;
    const operation = template === undefined ? undefined : document.paths[template]![method.toLowerCase()];
    const where = `${method} ${template ?? path} ${answer.statusCode}`;
    const documented = operation?.responses[String(answer.statusCode)];
    if (!documented) {
      t.fail(`${where}: the status is not documented`);
      return;
    }
    if (!documented.content?.['application/json']) {
      t.fail(`${where}: no body is documented`);
      return;
    }
    const pointer = ['paths', template!, method.toLowerCase(), 'responses', String(answer.statusCode), 'content', 'application/json', 'schema'].map(pointerSegment).join('/');
    const validate = ajv.getSchema(`openapi#/${pointer}`)!;
    const valid = validate(answer.json());
    t.ok(valid, `${where}: the body matches its documented schema${valid ? '' : `: ${ajv.errorsText(validate.errors)} in ${answer.body.slice(0, 300)}`}`);
  };
}
