import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * Which Host values the relay answers (DNS rebinding defence). A page on an attacker's domain
 * that re-points its name at 127.0.0.1 reaches the relay with `Host: attacker.example`; the
 * browser then treats our answers as same-origin to the attacker. Refusing unknown names keeps
 * even the unauthenticated `/` and `/v1/health` unreadable that way.
 *
 * Allowed: loopback addresses, `localhost` and `*.localhost` (RFC 6761: always loopback), the
 * address the relay is bound to (any address of this machine for a wildcard bind), and the
 * public hostnames the host announced (the tunnel's). The port is not compared: rebinding is
 * about the name, and a tunnel or proxy may present another port.
 */
export class HostPolicy {
  private publicHosts = new Set<string>();

  constructor(private readonly bound: string) {}

  /** Replaces the announced public hostnames; each a hostname or a URL (its hostname is used). */
  setPublicHosts(hosts: readonly string[]): void {
    const names = new Set<string>();
    for (const entry of hosts) {
      const name = normalise(entry.includes('://') ? new URL(entry).hostname : entry);
      if (name !== '') names.add(name);
    }
    this.publicHosts = names;
  }

  get announced(): readonly string[] {
    return [...this.publicHosts];
  }

  /** `authority` is a Host header value or an absolute-form target's authority: `name[:port]` or `[v6][:port]`. */
  allows(authority: string): boolean {
    const name = hostname(authority);
    if (name === undefined) return false;
    if (isLoopback(name)) return true;
    if (this.publicHosts.has(name)) return true;
    const bound = normalise(this.bound);
    if (name === bound) return true;
    if ((bound === '0.0.0.0' || bound === '::') && isIP(name) !== 0) return localAddresses().has(name);
    return false;
  }
}

function normalise(name: string): string {
  let n = name.trim().toLowerCase();
  if (n.startsWith('[') && n.endsWith(']')) n = n.slice(1, -1);
  // `localhost.` and `localhost` are the same name to a resolver.
  if (n.endsWith('.') && isIP(n) === 0) n = n.slice(0, -1);
  return n;
}

/** The host part of `name[:port]` / `[v6][:port]`, or undefined when that is not its shape. */
function hostname(authority: string): string | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/.exec(authority.trim());
  if (!match) return undefined;
  if (match[1] !== undefined && isIP(match[1]) !== 6) return undefined;
  return normalise(match[1] ?? match[2]);
}

function isLoopback(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) === 4) return name.startsWith('127.');
  if (isIP(name) === 6) return name === '::1' || /^::ffff:127\./.test(name);
  return false;
}

function localAddresses(): Set<string> {
  const addresses = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) addresses.add(normalise(a.address));
  return addresses;
}
