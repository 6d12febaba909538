import type { Test } from 'tap';

export interface Answer {
  statusCode: number;
  body: string;
  json(): any;
}

/** api-contract 1: a 4xx answers `{detail: string}`; `detail` optionally checked against a pattern. */
export function assertError(t: Test, response: Answer, status: number, detail?: RegExp | string, what = '') {
  t.equal(response.statusCode, status, `${what} status ${status} (got ${response.statusCode}: ${response.body.slice(0, 300)})`);
  let body: any;
  try {
    body = response.json();
  } catch {
    t.fail(`${what} body is not JSON: ${response.body.slice(0, 200)}`);
    return;
  }
  t.type(body.detail, 'string', `${what} detail is a string`);
  t.ok(String(body.detail).length > 0, `${what} detail is not empty`);
  if (typeof detail === 'string') t.equal(body.detail, detail, `${what} detail text`);
  else if (detail) t.match(body.detail, detail, `${what} detail names the problem`);
}
