import { spawn, type ChildProcess } from 'node:child_process';

export interface ServerProcess {
  child: ChildProcess;
  /** Everything the server printed so far. */
  output: () => string;
}

/**
 * The service in its own process from the TypeScript sources, as `npm start` runs it, with `env`
 * over the test's environment; nothing waited for. It runs outside tap's coverage
 * (NODE_V8_COVERAGE is not passed on): the in-process HTTP tests are what coverage measures, and
 * writing a child's at each exit costs time.
 */
export function spawnServer(env: Record<string, string>): ServerProcess {
  let output = '';
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_V8_COVERAGE' && name !== 'NODE_OPTIONS'));
  const child = spawn(process.execPath, ['--import', './test/support/typescript-loader.mjs', 'src/main.ts'], {
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  return { child, output: () => output };
}

/**
 * Waits until the server answers /health on `port` (true), exits, or has not answered for 60 s
 * (false either way).
 */
export async function answersHealth({ child }: ServerProcess, port: string | number): Promise<boolean> {
  for (let attempt = 0; attempt < 240 && child.exitCode === null; attempt++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((response) => response.ok, () => false)) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

/** The service in its own process (spawnServer) on 127.0.0.1, once it answers /health on env.PORT. */
export async function startServer(env: Record<string, string>): Promise<ServerProcess> {
  const server = spawnServer({ HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env });
  if (await answersHealth(server, env.PORT!)) return server;
  if (server.child.exitCode !== null) throw new Error(`server exited early: ${server.output()}`);
  server.child.kill('SIGKILL');
  throw new Error(`server did not answer /health: ${server.output()}`);
}
