// What `ngrok http … --log stdout --log-format json` prints: one JSON object a line, written by
// log15's JsonFormat (a Go map, so keys in sorted order): `t` (time), `lvl` (dbug, info, warn,
// eror, crit), `msg`, then the record's own keys. The one that matters:
//   {"addr":"http://127.0.0.1:53210","lvl":"info","msg":"started tunnel","name":"command_line","obj":"tunnels","t":"…","url":"https://….ngrok-free.app"}
// On a failure ngrok also writes `ERROR:  <message>` (plain text) to stderr and exits 1.

export interface NgrokRecord {
  lvl?: string;
  msg?: string;
  url?: string;
  err?: string;
  obj?: string;
  [key: string]: unknown;
}

export function parseRecord(line: string): NgrokRecord | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as NgrokRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** The public URL when this record announces the tunnel. */
export function startedUrl(record: NgrokRecord): string | undefined {
  if (record.msg !== 'started tunnel' || typeof record.url !== 'string') return undefined;
  return /^https:\/\/[^\s/]+$/.test(record.url) ? record.url : undefined;
}

export function isErrorRecord(record: NgrokRecord): boolean {
  return record.lvl === 'eror' || record.lvl === 'crit';
}

/** A readable line for messages: `failed to reconnect session: authentication failed: …`. */
export function describeRecord(record: NgrokRecord): string {
  const err = typeof record.err === 'string' ? `: ${record.err.replace(/\s*\r?\n\s*/g, ' ').trim()}` : '';
  return `${record.msg ?? ''}${err}`;
}

// The agent's session with ngrok's service dropped and came back (csess / tunnels.session records).
export function sessionSignal(record: NgrokRecord): 'lost' | 'connected' | undefined {
  if (record.msg === 'session closed, starting reconnect loop' || record.msg === 'failed to reconnect session') return 'lost';
  if (record.msg === 'client session established' || record.msg === 'tunnel session started') return 'connected';
  return undefined;
}
