import net from 'node:net';

export interface StreamedRequest {
  /** Sends the rest of the body and resolves with the raw answer once the server closes the connection. */
  finish(): Promise<string>;
  /** Ends the connection early (a teardown after a failed test). */
  destroy(): void;
}

/**
 * Sends a request over a real connection to 127.0.0.1:`port` with only the first `sentBytes` of its
 * body, so the route is under way and waits for the rest while a test arranges what happens then
 * (`inject` hands the whole body at once). The request asks to close the connection once answered.
 */
export async function startStreamedRequest(port: number, head: { method: string; url: string; headers: Record<string, string> }, body: Buffer, sentBytes: number): Promise<StreamedRequest> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let answer = '';
  socket.on('data', (chunk) => { answer += chunk.toString('latin1'); });
  const closed = new Promise((resolve) => socket.once('close', resolve));
  const headerLines = Object.entries({ ...head.headers, Host: '127.0.0.1', 'Content-Length': String(body.length), Connection: 'close' }).map(([name, value]) => `${name}: ${value}`);
  socket.write([`${head.method} ${head.url} HTTP/1.1`, ...headerLines, '', ''].join('\r\n'));
  socket.write(body.subarray(0, sentBytes));
  return {
    async finish() {
      // Written, not ended: a half-closed socket is a client that hung up.
      socket.write(body.subarray(sentBytes));
      await closed;
      return answer;
    },
    destroy: () => socket.destroy(),
  };
}
