import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freePort } from '../support/free-port.js';
import { startServer as startServerProcess } from '../support/server-process.js';

/**
 * The service as `npm start` runs it: its own process, the embedded database in DATA_DIR,
 * migrations at start, and a graceful stop on SIGTERM that keeps what was written.
 */
function startServer(dataDir: string, port: number) {
  return startServerProcess({ PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info', DATABASE_URL: '' });
}

/** Waits (up to 10 s) until the process has logged a line matching `pattern`: the lines after listening come a moment later. */
async function waitForLine(output: () => string, pattern: RegExp): Promise<void> {
  for (const deadline = Date.now() + 10_000; !pattern.test(output()) && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 20));
}

async function stopServer(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

t.test('serve: data survives a SIGTERM and a restart on the same DATA_DIR', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-serve-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;

  const first = await startServer(dataDir, port);
  t.same(await (await fetch(`${base}/v1/auth/setup-status`)).json(), { needs_setup: true });
  await waitForLine(first.output, /no admin exists yet/);
  t.match(first.output(), `"msg":"API documentation: http://127.0.0.1:${port}/docs"`, 'the log says where the API documentation is');
  t.match(first.output(), `"msg":"no admin exists yet: create the first with POST http://127.0.0.1:${port}/v1/auth/setup, body {email, password} (README: First admin and first API key)"`, 'and, on a fresh install, how to create the first admin');
  t.equal((await fetch(`${base}/health/ready`)).status, 200);
  const setup = await fetch(`${base}/v1/auth/setup`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@example.com', password: 'a long passphrase' }),
  });
  t.equal(setup.status, 201);
  t.equal(await stopServer(first.child), 0, 'SIGTERM ends the process with code 0');
  t.match(first.output(), /shutting down/);
  t.match(first.output(), /"msg":"stopped"/, 'the database was closed before exit');

  const second = await startServer(dataDir, port);
  t.same(await (await fetch(`${base}/v1/auth/setup-status`)).json(), { needs_setup: false }, 'the admin created before the restart is still there');
  await waitForLine(second.output, /API documentation/);
  t.notMatch(second.output(), /no admin exists yet/, 'once an admin exists, the log does not ask for one');
  const login = await fetch(`${base}/v1/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@example.com', password: 'a long passphrase' }),
  });
  t.equal(login.status, 200);
  t.equal(await stopServer(second.child), 0);
});

/** A raw HTTP/1.1 connection: what is written, and everything the server answered until it closed. */
function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk: Buffer) => { received += chunk.toString(); });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    socket,
    connected: new Promise<void>((resolve) => socket.once('connect', () => resolve())),
    /** Resolves with the text received once `pattern` shows up in it (within 10 s). */
    async until(pattern: RegExp): Promise<string> {
      const deadline = Date.now() + 10_000;
      while (!pattern.test(received)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} in 10 s; received: ${received}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return received;
    },
    closed: closed.then(() => received),
  };
}

t.test('serve: SIGTERM answers the request in flight and is not held open by idle or silent connections', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'rs-serve-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const server = await startServer(dataDir, port);

  // Connected and never sent a byte: Node counts it as busy, so server.close() alone waits for it.
  const silent = rawConnection(port);
  await silent.connected;
  // Kept alive after one answered request.
  const idle = rawConnection(port);
  idle.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
  await idle.until(/\r\n\r\n\{.*\}$/s);
  // Headers sent, half the body still to come when the signal arrives.
  const body = JSON.stringify({ email: 'admin@example.com', password: 'a long passphrase' });
  const inFlight = rawConnection(port);
  inFlight.socket.write(`POST /v1/auth/setup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`);
  await new Promise((resolve) => setTimeout(resolve, 200));

  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
  server.child.kill('SIGTERM');
  const forgotten = await Promise.race([silent.closed.then(() => 'closed'), new Promise((resolve) => setTimeout(() => resolve('still open after 10 s'), 10_000))]);
  t.equal(forgotten, 'closed', 'the connection that sent nothing is closed at once');
  await idle.closed;
  inFlight.socket.write(body.slice(10));
  const answer = await inFlight.closed;
  t.match(answer, /^HTTP\/1\.1 201 /, 'the request in flight is answered');
  t.match(answer, /\r\nconnection: close\r\n/i, 'and told that the connection closes');
  t.match(answer, /"email":"admin@example.com"/);
  t.equal(await exited, 0, 'the process stops by itself, not by the 25 s forced exit');
  t.match(server.output(), /"msg":"stopped"/);
  t.notMatch(server.output(), /longer than 25 s/);
});
