import { request } from 'node:https';
import type { VapidKeys } from './vapid';

/** A browser's push subscription as the relay keeps it: the checked endpoint and the keys it encrypts to. */
export interface PushTarget {
  endpoint: URL;
  keys: { p256dh: string; auth: string };
}

export type PushOutcome =
  | { outcome: 'sent'; status: number }
  /** 404/410: the push service says the subscription is gone; the relay forgets it. */
  | { outcome: 'gone'; status: number }
  | { outcome: 'failed'; status?: number; reason: string };

export interface PushSendOptions {
  /** Seconds the push service keeps the message for a phone that is offline (the TTL header). */
  ttlSeconds: number;
  timeoutMs: number;
}

/**
 * VAPID's contact (RFC 8292 §2.1): who runs the application server. The desktop has no
 * operator address of its own, so it names the project; Apple refuses a `localhost` address.
 */
export const VAPID_SUBJECT = 'https://github.com/deskrelay/deskrelay';

/** How long one push may take, all of it, to be accepted by the push service. */
export const PUSH_TIMEOUT_MS = 10_000;

/** What the push service may answer at most; anything past it is not read. */
const MAX_ANSWER_BYTES = 8 * 1024;

/**
 * One push (RFC 8030): the payload encrypted to the subscription's keys (RFC 8291, aes128gcm)
 * and signed with the desktop's VAPID key (RFC 8292), both by web-push; sent here, to the URL
 * that was checked when the phone subscribed (no redirects, no proxy, a timeout).
 */
export async function sendPush(target: PushTarget, payload: string, vapid: VapidKeys, options: PushSendOptions): Promise<PushOutcome> {
  const webpush = await import('web-push');
  const details = webpush.generateRequestDetails({ endpoint: target.endpoint.href, keys: target.keys }, payload, {
    vapidDetails: { subject: VAPID_SUBJECT, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
    TTL: options.ttlSeconds,
    urgency: 'normal',
    contentEncoding: 'aes128gcm',
  });
  return new Promise<PushOutcome>((resolve) => {
    const req = request(target.endpoint, { method: 'POST', headers: details.headers as Record<string, string>, timeout: options.timeoutMs }, (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) res.destroy();
      });
      const settle = () => {
        if (status >= 200 && status < 300) resolve({ outcome: 'sent', status });
        else if (status === 404 || status === 410) resolve({ outcome: 'gone', status });
        else resolve({ outcome: 'failed', status, reason: `the push service answered ${status}` });
      };
      res.once('end', settle);
      res.once('close', settle);
      res.on('error', settle);
    });
    // `timeout` is only the socket's idle time: a service that drips a byte now and then would
    // hold the push forever. The deadline covers the whole exchange.
    const giveUp = () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`));
    const deadline = setTimeout(giveUp, options.timeoutMs);
    req.once('close', () => clearTimeout(deadline));
    req.once('timeout', giveUp);
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ outcome: 'failed', reason: err.code ?? err.message }));
    req.end(details.body ?? undefined);
  });
}
