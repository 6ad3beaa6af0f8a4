// The benchmark's stand-in provider: Ollama's /api/chat NDJSON, fast and deterministic.
// The last message's content is a JSON plan: {"n": tokens, "interval": ms between tokens (0 = as
// fast as the reader takes them), "hold": ms to wait after the first token (idle streams)}.
// Every token's text is "<seq>:<send time, ns, CLOCK_MONOTONIC> " so a client on the same
// machine can compute each token's latency by subtracting.
// Prints {"port": N} on stdout once listening; exits when stdin closes.
import { createServer } from 'node:http';

const now = () => process.hrtime.bigint();
const line = (content) => `{"model":"bench","created_at":"2025-06-05T10:11:12.123456Z","message":{"role":"assistant","content":"${content}"},"done":false}\n`;
const DONE = '{"model":"bench","created_at":"2025-06-05T10:11:13.123456Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true}\n';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d) => (body += d));
  req.on('end', async () => {
    if (req.url === '/api/tags') {
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
      return res.end('{"models":[{"name":"bench"}]}');
    }
    let plan = { n: 10, interval: 0, hold: 0 };
    try {
      const messages = JSON.parse(body).messages;
      plan = { ...plan, ...JSON.parse(messages[messages.length - 1].content) };
    } catch {}
    let gone = false;
    res.on('close', () => (gone = true));
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    for (let i = 0; i < plan.n && !gone; i++) {
      const ok = res.write(line(`${i}:${now()} `));
      if (i === 0 && plan.hold > 0) await sleep(plan.hold);
      else if (plan.interval > 0) await sleep(plan.interval);
      else if (!ok) await new Promise((r) => res.once('drain', r).once('close', r));
    }
    if (!gone) res.end(DONE);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.stdin.on('end', () => process.exit(0)).resume();
