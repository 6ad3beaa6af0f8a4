/** HostPolicy on its own: the Host values the relay answers (the DNS-rebinding defence). */
import { describe, expect, it } from 'vitest';
import { HostPolicy } from '../../server/src/http/admission';

describe('HostPolicy', () => {
  it('allows loopback names and addresses with any port, and refuses other names', () => {
    const hosts = new HostPolicy('127.0.0.1');
    for (const ok of ['127.0.0.1', '127.0.0.1:53210', '127.9.9.9', 'localhost', 'LOCALHOST:1', 'localhost.', 'app.localhost', '[::1]:53210', '[::ffff:127.0.0.1]']) expect(hosts.allows(ok), ok).toBe(true);
    for (const bad of ['attacker.example', 'localhost.attacker.example', '10.0.0.1', '[::2]', '', 'a b', '[127.0.0.1]', 'host:99999x']) expect(hosts.allows(bad), bad).toBe(false);
  });

  it('allows the announced public hostnames (a URL stands for its hostname), replaced on each announcement', () => {
    const hosts = new HostPolicy('127.0.0.1');
    hosts.setPublicHosts(['https://Quiet-Fox.trycloudflare.com/', 'relay.example.']);
    expect(hosts.announced).toEqual(['quiet-fox.trycloudflare.com', 'relay.example']);
    expect(hosts.allows('quiet-fox.trycloudflare.com:443')).toBe(true);
    expect(hosts.allows('RELAY.example')).toBe(true);
    hosts.setPublicHosts([]);
    expect(hosts.allows('relay.example')).toBe(false);
  });

  it('answers the same Host value anew once the announced names change, either way, and any number of values alike', () => {
    const hosts = new HostPolicy('127.0.0.1');
    expect(hosts.allows('relay.example:443')).toBe(false);
    hosts.setPublicHosts(['relay.example']);
    expect(hosts.allows('relay.example:443')).toBe(true);
    hosts.setPublicHosts(['other.example']);
    expect(hosts.allows('relay.example:443')).toBe(false);
    expect(hosts.allows('other.example')).toBe(true);
    for (let i = 0; i < 200; i++) {
      expect(hosts.allows(`x${i}.attacker.example`)).toBe(false);
      expect(hosts.allows(`127.0.0.1:${i}`)).toBe(true);
    }
    expect(hosts.allows('relay.example:443')).toBe(false);
    expect(hosts.allows('other.example')).toBe(true);
  });

  it('allows the bound address itself', () => {
    expect(new HostPolicy('192.168.1.20').allows('192.168.1.20:53210')).toBe(true);
    expect(new HostPolicy('192.168.1.20').allows('192.168.1.21')).toBe(false);
  });
});
