/**
 * A small W3C WebDriver client over HTTP, for WebKit: Debian's WebKitWebDriver driving WebKitGTK's
 * MiniBrowser under Xvfb (scripts/install-webkit.mjs provisions both; no browser download).
 *
 *   const webkit = await startWebKit();
 *   const s = await webkit.session();
 *   await s.go(url); const el = await s.find('#send'); await s.click(el);
 *   await s.close(); await webkit.stop();
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';

export interface WebKitPaths {
  driver: string;
  xvfb: string;
  browser: string;
}

/** Runs scripts/install-webkit.mjs (installs when missing and root) and returns the paths it found. */
export function ensureWebKit(): WebKitPaths {
  const out = execFileSync(process.execPath, [join(ROOT, 'scripts', 'install-webkit.mjs')], { encoding: 'utf8', timeout: 600_000 });
  return JSON.parse(out.trim().split('\n').at(-1)!) as WebKitPaths;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export type ElementRef = { [ELEMENT]: string };

export class WebDriverError extends Error {
  constructor(
    readonly error: string,
    message: string,
  ) {
    super(`${error}: ${message}`);
  }
}

async function call<T = unknown>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { value: any };
  if (!res.ok) throw new WebDriverError(json.value?.error ?? `HTTP ${res.status}`, json.value?.message ?? '');
  return json.value as T;
}

export class Session {
  constructor(
    private readonly base: string,
    readonly id: string,
  ) {}

  private cmd<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    return call<T>(this.base, method, `/session/${this.id}${path}`, body);
  }

  go(url: string) {
    return this.cmd('POST', '/url', { url });
  }
  url() {
    return this.cmd<string>('GET', '/url');
  }
  refresh() {
    return this.cmd('POST', '/refresh', {});
  }
  setWindowRect(rect: { width: number; height: number }) {
    return this.cmd('POST', '/window/rect', rect);
  }
  find(css: string) {
    return this.cmd<ElementRef>('POST', '/element', { using: 'css selector', value: css });
  }
  findAll(css: string) {
    return this.cmd<ElementRef[]>('POST', '/elements', { using: 'css selector', value: css });
  }
  /** Waits for a CSS selector to match a displayed element. */
  async waitFor(css: string, timeout = 10_000): Promise<ElementRef> {
    const until = Date.now() + timeout;
    for (;;) {
      try {
        const el = await this.find(css);
        if (await this.cmd<boolean>('GET', `/element/${el[ELEMENT]}/displayed`)) return el;
      } catch (err) {
        if (!(err instanceof WebDriverError) || (err.error !== 'no such element' && err.error !== 'stale element reference')) throw err;
      }
      if (Date.now() > until) throw new Error(`timed out waiting for ${css}`);
      await sleep(50);
    }
  }
  click(el: ElementRef) {
    return this.cmd('POST', `/element/${el[ELEMENT]}/click`, {});
  }
  type(el: ElementRef, text: string) {
    return this.cmd('POST', `/element/${el[ELEMENT]}/value`, { text });
  }
  clear(el: ElementRef) {
    return this.cmd('POST', `/element/${el[ELEMENT]}/clear`, {});
  }
  text(el: ElementRef) {
    return this.cmd<string>('GET', `/element/${el[ELEMENT]}/text`);
  }
  /** Runs `script` (a function body) in the page; `arguments[i]` are the args. */
  exec<T = unknown>(script: string, ...args: unknown[]) {
    return this.cmd<T>('POST', '/execute/sync', { script, args });
  }
  /** The text of the first element matching `css`, or null. */
  textOf(css: string) {
    return this.exec<string | null>('const e = document.querySelector(arguments[0]); return e ? e.textContent : null;', css);
  }
  count(css: string) {
    return this.exec<number>('return document.querySelectorAll(arguments[0]).length;', css);
  }
  async screenshot(): Promise<Buffer> {
    return Buffer.from(await this.cmd<string>('GET', '/screenshot'), 'base64');
  }
  close() {
    return this.cmd('DELETE', '');
  }
}

export interface WebKit {
  session(): Promise<Session>;
  stop(): Promise<void>;
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** The pid an X server wrote to the display's lock file ('' while there is none). */
function readLock(display: number): string {
  try {
    return readFileSync(`/tmp/.X${display}-lock`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Starts Xvfb on a free display and WebKitWebDriver on a free port. */
export async function startWebKit(paths: WebKitPaths = ensureWebKit()): Promise<WebKit> {
  const until = Date.now() + 10_000;
  let display = 90 + Math.floor(Math.random() * 400);
  let xvfb: ChildProcess;
  // Test files run side by side: another file's Xvfb may take the display between the look and
  // the start (Xvfb then exits at once), so the next free one is tried.
  for (;;) {
    while (existsSync(`/tmp/.X11-unix/X${display}`) || existsSync(`/tmp/.X${display}-lock`)) display += 1;
    xvfb = spawn(paths.xvfb, [`:${display}`, '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'], { stdio: 'ignore' });
    // Ours once its socket is there and the display's lock names its pid.
    const ours = () => existsSync(`/tmp/.X11-unix/X${display}`) && readLock(display) === String(xvfb.pid);
    while (!ours() && xvfb.exitCode === null && Date.now() <= until) await sleep(50);
    if (xvfb.exitCode === null && ours()) break;
    if (Date.now() > until) {
      await stopProcess(xvfb);
      throw new Error(`Xvfb :${display} did not start`);
    }
    display += 1;
  }
  const port = await freePort();
  const driver = spawn(paths.driver, [`--port=${port}`, '--host=127.0.0.1'], { stdio: 'ignore', env: { ...process.env, DISPLAY: `:${display}` } });
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    try {
      const status = await call<{ ready: boolean }>(base, 'GET', '/status');
      if (status.ready) break;
    } catch {}
    if (driver.exitCode !== null || Date.now() > until) {
      await stopProcess(xvfb);
      throw new Error('WebKitWebDriver did not start');
    }
    await sleep(100);
  }
  const sessions = new Set<Session>();
  return {
    async session() {
      const created = await call<{ sessionId: string }>(base, 'POST', '/session', {
        capabilities: { alwaysMatch: { 'webkitgtk:browserOptions': { binary: paths.browser, args: ['--automation'] } } },
      });
      const s = new Session(base, created.sessionId);
      sessions.add(s);
      return s;
    },
    async stop() {
      for (const s of sessions) await s.close().catch(() => {});
      await stopProcess(driver);
      await stopProcess(xvfb);
    },
  };
}

/**
 * Runs `act` once the element can take it. A drawer or sheet still sliding covers what is under
 * it, and WebKitWebDriver calls that "element not interactable"; on a loaded machine the slide can
 * take seconds, so it is tried again for a while (the element must still become usable). A list
 * drawn again meanwhile (the chats' list after a refresh) leaves a found element "stale": `act`
 * finds it again, as a Playwright locator would.
 */
const RETRIED = new Set(['element not interactable', 'stale element reference']);

export async function whenInteractable(act: () => Promise<unknown>, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      await act();
      return;
    } catch (err) {
      if (!(err instanceof WebDriverError) || !RETRIED.has(err.error) || Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Waits until the element stops moving (the same box on two reads 100 ms apart). WebDriver clicks
 * at the element's centre as it is *now*: a button in a sheet or drawer still sliding in is hit at
 * a stale spot, and the click lands on whatever is there, so a close or a checkbox is missed.
 */
export async function whenStill(s: Session, el: ElementRef, timeoutMs = 10_000): Promise<void> {
  const box = () => s.exec<string>('const r = arguments[0].getBoundingClientRect(); return [r.x, r.y, r.width, r.height].join();', el);
  const until = Date.now() + timeoutMs;
  let last = await box();
  for (;;) {
    await sleep(100);
    const now = await box();
    if (now === last || Date.now() > until) return;
    last = now;
  }
}

/** Clicks the element `css` finds, once it is still and can take the click (whenStill, whenInteractable). */
export const clickWhenReady = (s: Session, css: string) =>
  whenInteractable(async () => {
    const el = await s.waitFor(css);
    await whenStill(s, el);
    await s.click(el);
  });
