import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * An empty config file of our own. Without `--config`, cloudflared reads ~/.cloudflared/config.yml,
 * whose ingress rules or tunnel id silently take over a quick tunnel (every request 404s).
 */
export function createIsolatedConfig(): { file: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'deskrelay-cloudflared-'));
  const file = path.join(dir, 'config.yml');
  writeFileSync(file, '', { mode: 0o600 });
  return {
    file,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

// Environment variables cloudflared reads as flags that would turn our quick tunnel into
// something else (a named tunnel, the hello-world page, a socket) or hide the URL line.
const HIJACKING_ENV = ['TUNNEL_HOSTNAME', 'TUNNEL_NAME', 'TUNNEL_TOKEN', 'TUNNEL_HELLO_WORLD', 'TUNNEL_UNIX_SOCKET', 'TUNNEL_LOGLEVEL'];

export function cloudflaredEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of HIJACKING_ENV) delete out[name];
  return out;
}

/** A loopback port free right now, for `--metrics` (cloudflared's default 20241+ may be another cloudflared's). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
