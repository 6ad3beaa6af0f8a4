import { RelayServer, type RelayOptions } from '../../server/src/session/relay';

/**
 * The child's side of the relay children (test/reliability/relayChild.ts, test/fixtures/push/relayChild.ts): each stdin line is a command, and SIGTERM, SIGINT or stdin
 * ending (the parent went away, even killed) runs `stop`, so no child outlives its test run.
 */
export function onRelayChildCommands(handle: (command: string) => void, stop: () => void): void {
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  let pending = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    pending += d;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const command = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      handle(command);
    }
  });
  process.stdin.on('end', stop);
}

/**
 * The relay a child runs: on 127.0.0.1, port 0, chatting with the stand-in Ollama at `providerUrl`
 * (no key, no workspaces, 8 streams); `options` add to it or change it.
 */
export function childRelay(provider: { providerUrl: string; model: string }, options: Pick<RelayOptions, 'version' | 'configDir'> & Partial<RelayOptions>): RelayServer {
  return new RelayServer({
    host: '127.0.0.1',
    port: 0,
    providers: { active: () => ({ ok: true, config: { id: 'local', kind: 'ollama', baseUrl: provider.providerUrl, model: provider.model } }) },
    keys: { get: async () => undefined, howToSet: () => 'not needed' },
    workspaces: () => 0,
    maxConcurrentStreams: () => 8,
    ...options,
  });
}

/** The child's line for its parent once its relay started: { url, token, pid }. */
export function announce({ url, token }: { url: string; token: string }): void {
  process.stdout.write(`${JSON.stringify({ url, token, pid: process.pid })}\n`);
}
