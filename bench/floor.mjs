#!/usr/bin/env node
// The Node floor (issue 28): the smallest relay that can be written on DeskRelay's stack, so the
// bench can say how much of the relay's cost is Node's own and how much is ours. node:http in,
// undici's `request` out (one keep-alive Agent, as server/src/providers/transport.ts), the same
// token check (SHA-256 of the presented bearer token against the expected one's, timingSafeEqual),
// the same response headers sent at once, the same SSE bytes (`data: {"type":"token","delta":…}\n\n`
// per token, one res.write per provider chunk, `data: {"type":"done",…}\n\n` to end). Nothing else:
// no config, no request ids, no log, no keep-alive or idle timers, no limits, no error wording.
//
//   node bench/floor.mjs --provider http://127.0.0.1:PORT --token TOKEN
// Prints {"port": N} once listening; exits when stdin closes.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '../package.json'));
const { Agent, request } = require('undici');

const args = process.argv.slice(2);
const arg = (name) => args[args.indexOf(`--${name}`) + 1];
const provider = `${arg('provider')}/api/chat`;
const sha = (s) => createHash('sha256').update(s, 'utf8').digest();
const expected = sha(arg('token'));
const dispatcher = new Agent({ keepAliveTimeout: 4_000, connectTimeout: 0, headersTimeout: 0, bodyTimeout: 0 });
const DONE = 'data: {"type":"done","finishReason":"stop"}\n\n';

const fail = (res, status) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(`{"error":{"code":"${status}"}}`);
};

const server = createServer((req, res) => {
  const m = /^bearer[ ]+(\S+)[ ]*$/i.exec(req.headers.authorization ?? '');
  if (!m || !timingSafeEqual(sha(m[1]), expected)) {
    req.resume();
    return fail(res, 401);
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d) => (body += d));
  req.on('end', async () => {
    let messages;
    try {
      messages = JSON.parse(body).messages;
    } catch {
      return fail(res, 400);
    }
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    const controller = new AbortController();
    // A response that ended normally also emits 'close': only a client gone early aborts.
    res.once('close', () => res.writableFinished || controller.abort());
    try {
      const out = JSON.stringify({ model: 'bench', messages, stream: true });
      const { body: stream } = await request(provider, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(out)) },
        body: out,
        dispatcher,
        signal: controller.signal,
      });
      stream.setEncoding('utf8');
      let rest = '';
      stream.on('data', (text) => {
        const lines = (rest + text).split('\n');
        rest = lines.pop();
        let framed = '';
        for (const line of lines) {
          if (line === '') continue;
          const o = JSON.parse(line);
          if (o.message?.content) framed += `data: {"type":"token","delta":${JSON.stringify(o.message.content)}}\n\n`;
        }
        if (framed !== '') res.write(framed);
      });
      stream.on('end', () => res.end(DONE));
      stream.on('error', () => res.destroy());
    } catch {
      res.destroy();
    }
  });
});
server.keepAliveTimeout = 60_000;
server.maxConnections = 20_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.stdin.on('end', () => process.exit(0)).resume();
// An exit, not a kill, so that --cpu-prof writes its profile (bench/profile.mjs --floor).
process.on('SIGTERM', () => process.exit(0));
