import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Lets `app.close()` finish once the requests in flight are answered.
 *
 * Node counts a connection that has not sent a request yet as busy (so that its header timeout
 * applies), and `server.close()` waits for busy connections while it stops those timeouts: a
 * client that opened a connection and sent nothing (connection pools that connect ahead, a
 * stalled client) held shutdown until the forced exit, which then skipped the writes of
 * shutdown. Here a connection is busy only while one of its requests is unanswered: on close,
 * the others are destroyed, and a busy one is closed after its last response.
 */
export const connectionDrain = fp(async (app: FastifyInstance) => {
  const sockets = new Set<Socket>();
  const requestsInFlight = new WeakMap<Socket, number>();
  let closing = false;

  app.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  app.addHook('onRequest', (request, _reply, done) => {
    const socket = request.raw.socket;
    requestsInFlight.set(socket, (requestsInFlight.get(socket) ?? 0) + 1);
    done();
  });

  // A request whose client went away needs no counting: its socket is closed and forgotten. The
  // floor at 0 keeps a response without a counted request (answered before this hook) harmless.
  app.addHook('onResponse', (request, _reply, done) => {
    const socket = request.raw.socket;
    const remaining = Math.max(0, (requestsInFlight.get(socket) ?? 0) - 1);
    requestsInFlight.set(socket, remaining);
    // The response has been handed to the socket: destroySoon() sends it, then closes, whether or
    // not the client closes its side. Requests made with inject() have no real socket.
    if (closing && remaining === 0 && sockets.has(socket)) socket.destroySoon();
    done();
  });

  // So that a client does not send its next request into a connection about to close.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  app.addHook('preClose', async () => {
    closing = true;
    for (const socket of sockets) {
      if ((requestsInFlight.get(socket) ?? 0) === 0) socket.destroy();
    }
  });
}, { name: 'connection-drain' });
