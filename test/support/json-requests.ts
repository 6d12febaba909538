import type { App } from '../../src/app.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** JSON requests through `app.inject` with the given headers (an admin's cookie, a bearer key). */
export function jsonRequests(app: App, headers: Record<string, string>) {
  async function request(method: Method, url: string, payload?: unknown) {
    return app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  }
  /** The parsed body of a 2xx answer; anything else throws, since the test is about what comes after. */
  async function ok<T>(method: Method, url: string, payload?: unknown): Promise<T> {
    const response = await request(method, url, payload);
    if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json();
  }
  return { request, ok };
}
