/**
 * The agent from a phone the desk allowed, with decisions the phone signs (issue 36), in Chromium
 * at 375 px against the real CLI (`deskrelay serve --agent`) and the scripted model: the phone
 * pairs by link (registering its public key), the agent screen first shows the desk's words on how
 * to allow it (403 agent.device_not_allowed), the desk allows it, and an approval the page signs
 * is accepted and run; the signature is checked here too, with node's WebCrypto and the public
 * key the phone registered, over the contract's message and the event's digest.
 */
import { createHash, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { webClientLink } from '../../server/src/session/pairing';
import { bearer, send } from '../helpers/http';
import { allowAgent, actAs } from '../helpers/devices';
import { DIGEST_MISMATCH_MESSAGE } from '../../web/src/agent/sign';
import { agentPhone, SCREENSHOTS, useAgentDeskSuite, swActive } from './harness';
import { serviceWorkerPush } from './serviceWorkerPush';

const suite = useAgentDeskSuite('deskrelay-agent-signed-', { 'README.md': '# project\n' });
const desk = suite.desk;

interface Paired {
  page: Page;
  deviceId: string;
  publicKey: { kty: string; crv: string; x: string; y: string };
}

/** A phone paired by the desk's link (the pairing token, not the test's own agent device). */
async function pairedPhone(): Promise<Paired> {
  const p = await suite.openPhone();
  const registration = p.page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/v1/devices');
  await p.page.goto(webClientLink(desk.proxy.url, desk.cli.pairingToken));
  const res = await registration;
  expect(res.status()).toBe(201);
  const { publicKey } = res.request().postDataJSON() as Paired;
  const { id } = (await res.json()) as { id: string };
  await expect.poll(() => p.page.locator('#conn').textContent()).toContain('Connected · ');
  return { page: p.page, deviceId: id, publicKey };
}

const deskOf = () => ({ url: desk.cli.url, token: desk.cli.pairingToken, configDir: desk.cli.configDir });

describe('the agent on a phone the desk allowed', () => {
  it('before the desk allows it, the agent screen says how; after, a decision the page signs is accepted and the command runs', async () => {
    const { page, deviceId, publicKey } = await pairedPhone();
    await page.getByRole('tab', { name: 'Agent' }).click();
    await page.getByRole('heading', { name: 'Agent sessions' }).waitFor();
    const screenText = () => page.locator('section.agent-screen').textContent();
    await expect.poll(screenText).toContain('until the desk allows it');
    expect(await screenText()).toContain(`deskrelay devices allow ${deviceId}`);
    await page.screenshot({ path: join(SCREENSHOTS, 'agent-not-allowed.png') });

    await allowAgent(deskOf(), deviceId);
    desk.model.script([
      { calls: [{ name: 'run_command', arguments: { command: 'echo signed > proof.txt' } }] },
      { text: ['Done.'] },
    ]);
    await page.reload();
    await page.getByRole('tab', { name: 'Agent' }).click();
    await page.getByRole('button', { name: 'New session' }).click();
    await page.getByLabel('What should it do?').fill('Write the proof');
    await page.getByRole('button', { name: 'Start' }).click();
    const card = page.locator('.approval:not(.decided)');
    await card.waitFor();
    expect(await card.locator('pre.command').textContent()).toBe('echo signed > proof.txt');

    const decision = page.waitForRequest((r) => r.method() === 'POST' && /\/approvals\//.test(new URL(r.url()).pathname));
    await card.getByRole('button', { name: 'Allow', exact: true }).click();
    const req = await decision;
    const [, sessionId, callId] = /\/v1\/agent\/sessions\/([^/]+)\/approvals\/([^/]+)$/.exec(new URL(req.url()).pathname)!;
    const body = req.postDataJSON() as { decision: string; signature: string };
    expect(Object.keys(body).sort()).toEqual(['decision', 'signature']);
    expect(body.decision).toBe('allow');

    // The relay's check, done here with the key the phone registered.
    const digest = createHash('sha256').update('echo signed > proof.txt', 'utf8').digest('hex');
    const key = await webcrypto.subtle.importKey('jwk', publicKey, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
    const signature = Buffer.from(body.signature, 'base64url');
    expect(signature).toHaveLength(64);
    const message = (d: string) => new TextEncoder().encode(`deskrelay-approval:v1\n${decodeURIComponent(sessionId!)}\n${decodeURIComponent(callId!)}\n${d}\n${digest}`);
    expect(await webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, signature, message('allow'))).toBe(true);
    expect(await webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, signature, message('deny'))).toBe(false);

    // Accepted: the card shows it and the command ran.
    await expect.poll(() => page.locator('.approval.decided .approval-outcome').last().textContent()).toBe('Allowed');
    await expect.poll(() => readFileSync(join(desk.repo, 'proof.txt'), 'utf8').trim(), { timeout: 15_000 }).toBe('signed');
    const list = await send(desk.cli.url, '/v1/agent/sessions', { headers: bearer(desk.cli.token) });
    for (const s of list.json?.sessions ?? []) await actAs(desk.cli, s.id, 'delete');
  });

  it('a push agent_needs_you offers Allow and Deny (Chromium); Allow in the service worker signs with the phone\'s key and the command runs', async () => {
    const { page, deviceId, publicKey } = await pairedPhone();
    await allowAgent(deskOf(), deviceId);
    desk.model.script([{ calls: [{ name: 'run_command', arguments: { command: 'echo from-the-lock-screen > pushed.txt' } }] }, { text: ['ok'] }]);
    const created = await send(desk.cli.url, '/v1/agent/sessions', { method: 'POST', headers: { ...bearer(desk.cli.token), 'Content-Type': 'application/json' }, body: '{"prompt":"From the desk"}' });
    const id = created.json.id as string;
    const pendingNow = async () => (await send(desk.cli.url, `/v1/agent/sessions/${id}`, { headers: bearer(desk.cli.token) })).json.pending as { callId: string; digest: string }[];
    await expect.poll(async () => (await pendingNow()).length).toBe(1);
    const [{ callId, digest }] = await pendingNow();

    await page.context().grantPermissions(['notifications'], { origin: new URL(desk.proxy.url).origin });
    await swActive(page);
    const push = await serviceWorkerPush(page.context(), page, desk.proxy.url);
    await push.deliver({ type: 'agent_needs_you', session: id, callId });
    const shown = await push.worker.evaluate(async () => {
      const reg = (globalThis as any).registration as ServiceWorkerRegistration;
      return (await reg.getNotifications()).map((n) => ({ title: n.title, actions: ((n as any).actions as { action: string; title: string }[]).map((a) => ({ action: a.action, title: a.title })) }));
    });
    expect(shown).toEqual([{ title: 'The agent needs you', actions: [{ action: 'allow', title: 'Allow' }, { action: 'deny', title: 'Deny' }] }]);

    // Tapping Allow: the browser fires notificationclick with action "allow" at the worker. The
    // worker's fetch is watched to read what it sends.
    await push.worker.evaluate(async () => {
      const scope = globalThis as any;
      scope.__sent = [];
      const realFetch = scope.fetch.bind(scope);
      scope.fetch = (input: RequestInfo, init?: RequestInit) => {
        scope.__sent.push({ url: String(input), method: init?.method ?? 'GET', body: typeof init?.body === 'string' ? init.body : null, auth: new Headers(init?.headers).get('Authorization') });
        return realFetch(input, init);
      };
      const [n] = await (scope.registration as ServiceWorkerRegistration).getNotifications();
      try {
        scope.dispatchEvent(new scope.NotificationEvent('notificationclick', { notification: n, action: 'allow' }));
      } catch {
        /* a synthetic event's waitUntil throws; the handler has started its work by then */
      }
    });
    await expect.poll(() => readFileSync(join(desk.repo, 'pushed.txt'), 'utf8').trim(), { timeout: 15_000 }).toBe('from-the-lock-screen');
    const sent = (await push.worker.evaluate(() => (globalThis as any).__sent)) as { url: string; method: string; body: string | null; auth: string }[];
    const posted = sent.find((r) => r.method === 'POST')!;
    expect(new URL(posted.url, desk.proxy.url).pathname).toBe(`/v1/agent/sessions/${id}/approvals/${callId}`);
    expect(posted.auth).toMatch(/^Bearer drd_/);
    const body = JSON.parse(posted.body!) as { decision: string; signature: string };
    expect(body.decision).toBe('allow');
    const key = await webcrypto.subtle.importKey('jwk', publicKey, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
    const message = new TextEncoder().encode(`deskrelay-approval:v1\n${id}\n${callId}\nallow\n${digest}`);
    expect(digest).toBe(createHash('sha256').update('echo from-the-lock-screen > pushed.txt', 'utf8').digest('hex'));
    expect(await webcrypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, Buffer.from(body.signature, 'base64url'), message)).toBe(true);
    await actAs(desk.cli, id, 'delete');
  });

  it('a card whose digest is not the digest of what it shows (changed on the way) says so, and nothing is signed or sent', async () => {
    const p = await suite.openPhone();
    // Something between the desk and the phone changes the command the card shows, keeping the
    // relay's digest: the events the page reads have "rm -rf ~" where the desk sent "echo safe".
    await p.page.addInitScript(() => {
      const realFetch = window.fetch.bind(window);
      window.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
        const res = await realFetch(input, init);
        if (!String(input).endsWith('/events') || !res.body) return res;
        const swap = new TransformStream<string, string>({ transform: (chunk, out) => out.enqueue(chunk.split('echo safe').join('rm -rf ~')) });
        const body = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(swap).pipeThrough(new TextEncoderStream());
        return new Response(body, { status: res.status, headers: res.headers });
      };
    });
    await agentPhone(p.page, desk);
    desk.model.script([{ calls: [{ name: 'run_command', arguments: { command: 'echo safe' } }] }, { text: ['ok'] }]);
    const posts: string[] = [];
    p.page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('/approvals/')) posts.push(r.url());
    });
    await p.page.getByRole('tab', { name: 'Agent' }).click();
    await p.page.getByRole('button', { name: 'New session' }).click();
    await p.page.getByLabel('What should it do?').fill('Be safe');
    await p.page.getByRole('button', { name: 'Start' }).click();
    const card = p.page.locator('.approval').last();
    await card.waitFor();
    expect(await card.locator('pre.command').textContent()).toBe('rm -rf ~');
    await expect.poll(() => card.locator('.approval-outcome').textContent()).toBe(DIGEST_MISMATCH_MESSAGE);
    expect(await card.getAttribute('class')).toContain('tampered');
    expect(await card.getByRole('button', { name: 'Allow', exact: true }).isDisabled()).toBe(true);
    await card.getByRole('button', { name: 'Allow', exact: true }).click({ force: true });
    await p.page.screenshot({ path: join(SCREENSHOTS, 'agent-digest-mismatch.png') });
    expect(posts).toEqual([]);
    const list = await send(desk.cli.url, '/v1/agent/sessions', { headers: bearer(desk.cli.token) });
    const [session] = list.json.sessions as { id: string; pending: number }[];
    expect(session!.pending).toBe(1);
    await actAs(desk.cli, session!.id, 'delete');
  });
});
