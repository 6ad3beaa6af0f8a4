/**
 * A test-only HTTP proxy in front of the relay, standing in for the networks between a phone and
 * the desktop: it passes requests and WebSocket upgrades through, can cut every connection at once
 * (the phone's screen slept, the radio dropped), and can hold back streamed replies (a buffering
 * proxy: an SSE response arrives only when it has ended).
 *
 *   const proxy = await startProxy(relayUrl);
 *   proxy.url                        // load the page from here
 *   proxy.cut()                      // destroy every open connection, both sides
 *   proxy.holdStreams = true         // text/event-stream responses are buffered until they end
 *   proxy.stall(true)                // the network goes silent: no byte of any response gets through
 *                                    // (nor a new connection's answer) until stall(false)
 *   proxy.refuse = true              // new connections are reset at once (the desktop is unreachable)
 */
import { createServer, request, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

export interface TestProxy {
  url: string;
  holdStreams: boolean;
  /** New connections are reset as soon as they open. */
  refuse: boolean;
  /** true: every response (open and new) is held back, connections stay open; false: what was held flows on. */
  stall(on: boolean): void;
  /** Requests seen, as `METHOD path` (no query, no headers). */
  seen: string[];
  /** Requests that carried a bearer token, as `METHOD path token` (which token a client sends where). */
  bearers: string[];
  cut(): void;
  /** From now on, pass to this relay instead (a relay restarted on another port). */
  retarget(target: string): void;
  close(): Promise<void>;
}

export async function startProxy(target: string): Promise<TestProxy> {
  let upstream = new URL(target);
  const sockets = new Set<Socket>();
  let stalled = false;
  const held = new Set<() => void>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const state: TestProxy = {
    url: '',
    holdStreams: false,
    refuse: false,
    stall(on) {
      stalled = on;
      if (on) return;
      for (const go of [...held]) go();
      held.clear();
    },
    seen: [],
    bearers: [],
    cut() {
      for (const s of sockets) s.destroy();
    },
    retarget(next) {
      upstream = new URL(next);
    },
    close: () =>
      new Promise<void>((resolve) => {
        state.cut();
        server.close(() => resolve());
      }),
  };

  const server = createServer((req, res) => {
    state.seen.push(`${req.method} ${(req.url ?? '').split('?')[0]}`);
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (bearer) state.bearers.push(`${req.method} ${(req.url ?? '').split('?')[0]} ${bearer}`);
    const up = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent: false },
      (upRes: IncomingMessage) => {
        track(upRes.socket);
        const streaming = String(upRes.headers['content-type'] ?? '').startsWith('text/event-stream');
        if (state.holdStreams && streaming) {
          const parts: Buffer[] = [];
          upRes.on('data', (c: Buffer) => parts.push(c));
          upRes.on('end', () => {
            if (res.destroyed) return;
            res.writeHead(upRes.statusCode ?? 502, upRes.headers);
            res.end(Buffer.concat(parts));
          });
          return;
        }
        const pass = () => {
          if (res.destroyed) return;
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          res.flushHeaders();
          upRes.on('data', (c: Buffer) => {
            if (!stalled) return void res.write(c);
            // Silence: the bytes wait (in order) until the stall ends.
            upRes.pause();
            held.add(() => {
              if (!res.destroyed) res.write(c);
              upRes.resume();
            });
          });
          upRes.on('end', () => {
            if (!stalled) return void res.end();
            held.add(() => void (res.destroyed || res.end()));
          });
        };
        if (stalled) held.add(pass);
        else pass();
      },
    );
    up.on('error', () => res.destroy());
    // The client leaving closes the upstream request too, as a real proxy would.
    res.once('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  server.on('connection', (s: Socket) => {
    if (state.refuse) return void s.resetAndDestroy();
    track(s);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    state.seen.push(`${req.method} ${(req.url ?? '').split('?')[0]} (upgrade)`);
    track(socket);
    const up = connect(Number(upstream.port), upstream.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      up.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) up.write(head);
      socket.pipe(up).pipe(socket);
    });
    track(up);
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}
