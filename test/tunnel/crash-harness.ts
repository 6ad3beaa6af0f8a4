// Bundled and run as its own Node process by crash.test.ts: starts a tunnel through the real
// QuickTunnel, prints cloudflared's pid, then waits to be killed without any chance to clean up.
import { QuickTunnel } from '../../server/src/tunnel';
import { EdgeAgent, HEALTH_PATH } from './helpers';

const env = process.env;
const tunnel = new QuickTunnel({
  binary: env.HARNESS_CLOUDFLARED!,
  localUrl: env.HARNESS_RELAY_URL!,
  healthPath: HEALTH_PATH,
  probe: { agent: new EdgeAgent(env.STANDIN_CLOUDFLARED_INFO!, env.HARNESS_CA!), intervalMs: 200 },
});
tunnel.start().then(
  (url) => {
    process.stdout.write(`${JSON.stringify({ url, pid: tunnel.pid })}\n`);
    setInterval(() => {}, 1 << 30);
  },
  (err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  },
);
