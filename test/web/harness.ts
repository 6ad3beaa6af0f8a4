/**
 * The phone web client under test: a real RelayServer with a stand-in Ollama, Debian's Chromium
 * driven by playwright-core (it never downloads a browser) at a phone viewport, and helpers for
 * pairing and reading the page.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page, type Request } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startRelay, type TestRelay } from '../helpers/relay';
import { allowAgent } from '../helpers/devices';
import { webClientLink } from '../../server/src/session/pairing';
import { startOllamaStandIn, type OllamaStandIn, type OllamaStandInOptions } from '../fixtures/providers/ollama';
import { gitProject, startCli, type Cli } from '../agent/support';
import { startScriptedModel, type ScriptedModel } from '../fixtures/providers/scripted';
import { startProxy, type TestProxy } from './proxy';
import { startWebKit, whenInteractable, type Session, type WebKit } from './webdriver';

const ROOT = join(__dirname, '..', '..');
export const SCREENSHOTS = join(ROOT, 'test-results', 'web');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let built = false;
// Which vitest run last built this checkout's web client (vitest.config.mts names each run), and the lock its builder holds.
const WEB_BUILT = join(tmpdir(), `deskrelay-web-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}`);
const WEB_BUILDING = `${WEB_BUILT}.lock`;

/**
 * Builds the web client (scripts/build-web.mjs: web/src → media/web/app.js) once per vitest run,
 * so the suite runs from a clean checkout: the first test file that needs it builds, files running
 * beside it wait for that build instead of each making their own.
 */
export function ensureVendor(): void {
  if (built) return;
  const run = process.env.DESKRELAY_TEST_RUN;
  const builtThisRun = () => run !== undefined && existsSync(WEB_BUILT) && readFileSync(WEB_BUILT, 'utf8') === run;
  while (!builtThisRun()) {
    try {
      mkdirSync(WEB_BUILDING);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A builder that died (its run was killed) leaves its lock behind; a build takes seconds.
      const since = statSync(WEB_BUILDING, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > 120_000) rmSync(WEB_BUILDING, { recursive: true, force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
      continue;
    }
    try {
      if (builtThisRun()) break;
      execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-web.mjs'), '--quiet'], { cwd: ROOT, stdio: 'inherit' });
      if (run === undefined) break;
      writeFileSync(WEB_BUILT, run);
    } finally {
      rmSync(WEB_BUILDING, { recursive: true, force: true });
    }
  }
  built = true;
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM} (apt-get install chromium)`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** A phone: 375×812, touch, mobile. */
export async function phone(browser: Browser, colorScheme: 'light' | 'dark' = 'light'): Promise<{ context: BrowserContext; page: Page; console: string[] }> {
  const context = await browser.newContext({
    viewport: { width: 375, height: 812 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    colorScheme,
    userAgent: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Mobile Safari/537.36',
  });
  const page = await context.newPage();
  const console: string[] = [];
  page.on('console', (m) => console.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
  return { context, page, console };
}

export interface Desk {
  relay: TestRelay;
  ollama: OllamaStandIn;
  close(): Promise<void>;
}

/** The stand-in Ollama (`options`) and a relay (`relayOptions`) chatting with it, model qwen3. */
export async function startDesk(options: OllamaStandInOptions = {}, relayOptions: Parameters<typeof startRelay>[0] = {}): Promise<Desk> {
  ensureVendor();
  const ollama = await startOllamaStandIn(options);
  const relay = await startRelay(relayOptions);
  relay.useProvider({ id: 'local', kind: 'ollama', baseUrl: ollama.url, model: 'qwen3' });
  return {
    relay,
    ollama,
    async close() {
      await relay.close();
      await ollama.close();
    },
  };
}

export interface PhoneSuite {
  /** Stays the same object for the whole file, so a test file can keep it in a const. */
  readonly desk: Desk;
  readonly browser: Browser;
  /** Run after each test, the last added first (a page closes before what it used). */
  readonly cleanups: (() => Promise<unknown>)[];
  /** phone() on the suite's browser, closed after the test. */
  openPhone(colorScheme?: 'light' | 'dark'): ReturnType<typeof phone>;
}

/**
 * One Chromium and one desk for a whole test file, set up and torn down by vitest hooks, with
 * per-test cleanups; call it at the top level of the file.
 */
export function usePhoneSuite(options: OllamaStandInOptions = { mode: 'normal' }): PhoneSuite {
  let browser: Browser | undefined;
  let started: Desk | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  const desk: Desk = {
    get relay() {
      return started!.relay;
    },
    get ollama() {
      return started!.ollama;
    },
    close: async () => started?.close(),
  };
  beforeAll(async () => {
    browser = await launchBrowser();
    started = await startDesk(options);
  });
  afterAll(async () => {
    await browser?.close();
    await started?.close();
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  return {
    desk,
    get browser() {
      return browser!;
    },
    cleanups,
    async openPhone(colorScheme = 'light') {
      const p = await phone(browser!, colorScheme);
      cleanups.push(() => p.context.close());
      return p;
    },
  };
}

export interface ProxiedPhoneSuite {
  browser: Browser;
  desk: Desk;
  /** The test proxy in front of the desk's relay. */
  proxy: TestProxy;
}

/**
 * One Chromium and one desk behind the test proxy for a whole test file, handed to `started`
 * before the tests and closed after them, the browser first. After each test `reset` runs, then
 * `cleanups`, the last added first; call it at the top level of the file.
 */
export function useProxiedPhoneSuite(started: (s: ProxiedPhoneSuite) => void, cleanups: (() => Promise<unknown>)[], reset?: () => void): void {
  let browser: Browser | undefined;
  let desk: Desk | undefined;
  let proxy: TestProxy | undefined;
  beforeAll(async () => {
    browser = await launchBrowser();
    desk = await startDesk({ mode: 'normal' });
    proxy = await startProxy(desk.relay.url);
    started({ browser, desk, proxy });
  });
  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    await desk?.close();
  });
  afterEach(async () => {
    reset?.();
    while (cleanups.length) await cleanups.pop()!();
  });
}

export interface ProxiedPhone {
  context: BrowserContext;
  page: Page;
  console: string[];
  /** The page's chat stream POSTs: a reply's start, then each resume. */
  posts: Request[];
}

/** Records the page's chat stream POSTs, as they are sent. */
export function watchPosts(page: Page): Request[] {
  const posts: Request[] = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().endsWith('/v1/chat/stream')) posts.push(r);
  });
  return posts;
}

/**
 * A phone of the suite's desk, paired by its link through the proxy and at the chat; its context
 * closes after the test (`cleanups`), or a new page opens in `context`, which the test owns.
 * `init` runs before the page's own scripts. `clock` installs Playwright's clock in the page: time
 * runs as usual until the test moves it on (page.clock.fastForward), so a test of what the page
 * does after 20 s without a byte makes those 20 s pass at once instead of waiting for them.
 */
export async function openProxiedPhone(
  s: ProxiedPhoneSuite,
  cleanups: (() => Promise<unknown>)[],
  opts: { colorScheme?: 'light' | 'dark'; init?: string; clock?: boolean; context?: BrowserContext } = {},
): Promise<ProxiedPhone> {
  const p = opts.context ? { context: opts.context, page: await opts.context.newPage(), console: [] as string[] } : await phone(s.browser, opts.colorScheme);
  if (!opts.context) cleanups.push(() => p.context.close());
  if (opts.init) await p.page.addInitScript(opts.init);
  if (opts.clock) await p.page.clock.install();
  const posts = watchPosts(p.page);
  await p.page.goto(webClientLink(s.proxy.url, s.desk.relay.token));
  await p.page.locator('#chat').waitFor();
  return { ...p, posts };
}

export interface AgentDesk {
  model: ScriptedModel;
  cli: Cli & { configDir: string };
  /** The test proxy in front of the CLI. */
  proxy: TestProxy;
  /** The git project the agent works in. */
  repo: string;
  /** Stops all of it and removes its folders. */
  close(): Promise<void>;
}

/** The workspace agent's desk for the phone: a git project of `files`, the scripted model, `deskrelay serve --agent` on it, the test proxy in front. */
export async function startAgentDesk(prefix: string, files: Record<string, string>, config: (modelUrl: string) => Record<string, unknown> = () => ({})): Promise<AgentDesk> {
  const { base, repo } = gitProject(prefix, files);
  const model = await startScriptedModel();
  const cli = await startCli(['--agent', repo], `${model.url}/v1`, {}, config(`${model.url}/v1`));
  const proxy = await startProxy(cli.url);
  return {
    model,
    cli,
    proxy,
    repo,
    async close() {
      await proxy.close();
      cli.child.kill('SIGKILL');
      await model.close();
      rmSync(base, { recursive: true, force: true });
      rmSync(cli.configDir, { recursive: true, force: true });
    },
  };
}

export interface AgentDeskSuite {
  /** Stays the same object for the whole file, so a test file can keep it in a const. */
  readonly desk: AgentDesk;
  readonly browser: Browser;
  /** phone() on the suite's browser, closed after the test. */
  openPhone(colorScheme?: 'light' | 'dark'): ReturnType<typeof phone>;
}

/**
 * One Chromium and one agent desk (startAgentDesk) for a whole test file, set up and torn down by
 * vitest hooks, with the pages it opens closed after each test; call it at the top level.
 */
export function useAgentDeskSuite(prefix: string, files: Record<string, string>, config?: (modelUrl: string) => Record<string, unknown>): AgentDeskSuite {
  let browser: Browser | undefined;
  let started: AgentDesk | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  const desk: AgentDesk = {
    get model() {
      return started!.model;
    },
    get cli() {
      return started!.cli;
    },
    get proxy() {
      return started!.proxy;
    },
    get repo() {
      return started!.repo;
    },
    close: async () => started?.close(),
  };
  beforeAll(async () => {
    ensureVendor();
    started = await startAgentDesk(prefix, files, config);
    browser = await launchBrowser();
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  afterAll(async () => {
    await browser?.close();
    await started?.close();
  });
  return {
    desk,
    get browser() {
      return browser!;
    },
    async openPhone(colorScheme = 'light') {
      const p = await phone(browser!, colorScheme);
      cleanups.push(() => p.context.close());
      return p;
    },
  };
}

/**
 * A phone of the agent's desk, as a person makes one (issue 36): paired by the desk's link (the
 * pairing token; the phone registers with its own key), its device allowed the agent at the
 * desk, then the app opened at `path` (default `/`). Resolves with the device's id.
 */
export async function agentPhone(page: Page, agent: { cli: AgentDesk['cli']; proxy: { url: string } }, path = '/'): Promise<string> {
  const registered = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/v1/devices');
  await page.goto(webClientLink(agent.proxy.url, agent.cli.pairingToken));
  const { id } = (await (await registered).json()) as { id: string };
  await allowAgent({ url: agent.cli.url, token: agent.cli.pairingToken, configDir: agent.cli.configDir }, id);
  await page.goto(`${agent.proxy.url}${path}`);
  return id;
}

export interface WebKitSuite {
  webkit: WebKit;
  desk: Desk;
  /** The test proxy in front of the desk's relay, when asked for. */
  proxy: TestProxy;
}

/**
 * One WebKit (MiniBrowser over WebDriver) and one desk (its relay made with `relay`) for a whole
 * test file, with the test proxy in front of the relay when `proxy`, handed to `started` before the tests and stopped after them,
 * the browser first; call it at the top level of the file.
 */
export function useWebKitSuite(
  options: OllamaStandInOptions,
  started: (s: WebKitSuite) => void,
  opts: { proxy?: boolean; relay?: Parameters<typeof startRelay>[0] } = {},
): void {
  let webkit: WebKit | undefined;
  let desk: Desk | undefined;
  let proxy: TestProxy | undefined;
  beforeAll(async () => {
    ensureVendor();
    mkdirSync(SCREENSHOTS, { recursive: true });
    webkit = await startWebKit();
    desk = await startDesk(options, opts.relay);
    if (opts.proxy) proxy = await startProxy(desk.relay.url);
    started({ webkit, desk, proxy: proxy! });
  }, 120_000);
  afterAll(async () => {
    await webkit?.stop();
    await proxy?.close();
    await desk?.close();
  });
}

/** A WebKit window at phone size (375 × 812). */
export async function phoneSession(webkit: WebKit): Promise<Session> {
  const s = await webkit.session();
  await s.setWindowRect({ width: 375, height: 812 });
  return s;
}

/** Types `text` into the WebKit client's message box; cleared inside the retry, so a try that failed half-way cannot leave text behind. */
export async function typeMessage(s: Session, text: string): Promise<void> {
  const box = await s.waitFor('form.compose textarea[name="message"]');
  await whenInteractable(async () => {
    await s.clear(box);
    await s.type(box, text);
  });
}

/** Types `text` into the WebKit client's message box and sends it. */
export async function sendMessage(s: Session, text: string): Promise<void> {
  await typeMessage(s, text);
  await s.click(await s.find('form.compose button[type="submit"]'));
}

export function pairingJson(url: string, token: string): string {
  return JSON.stringify({ url, token });
}

/** Pair by pasting the pairing JSON, as a user would. */
export async function pairByPaste(page: Page, base: string, json: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.getByLabel('Pairing JSON').fill(json);
  await page.getByRole('button', { name: 'Connect' }).click();
}

/** Opens the settings sheet (the header's menu), where the desktop's details and the phone's choices live. */
export async function openSettings(page: Page): Promise<void> {
  if (await page.locator('#settings-sheet').isHidden()) await page.getByRole('button', { name: 'Settings', exact: true }).click();
  await page.locator('#settings-sheet').waitFor();
}

export async function closeSettings(page: Page): Promise<void> {
  if (await page.locator('#settings-sheet').isVisible()) await page.getByRole('button', { name: 'Close settings' }).click();
}

export async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** The text of the latest reply (the answer part, without the thinking section). */
export function lastReply(page: Page) {
  return page.locator('.msg.assistant').last().locator('.reply');
}

/**
 * Resolves once the page's service worker is active (what push and notifications need: the
 * worker's notificationclick finds pages with includeUncontrolled, as web/sw/sw.ts does). A page
 * that navigated while the worker activated (agentPhone: the pairing link, then the app) is
 * not controlled until its next load, so this does not wait for control; swControls does.
 */
export async function swActive(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const reg = await (globalThis as any).navigator.serviceWorker.ready;
    const worker = reg.active;
    if (worker.state !== 'activated') await new Promise<void>((resolve) => worker.addEventListener('statechange', () => worker.state === 'activated' && resolve()));
  });
}

/**
 * Resolves once a service worker controls the page (it claims its clients on activation; a page
 * loaded once, from the pairing link, is one of them). Its
 * install first fetches the whole app shell, which under a full CI (every core busy with other
 * files and browsers) has taken over 10 s: the limit is 30 s, a time limit, not a speed asserted.
 */
export async function swControls(page: Page): Promise<void> {
  try {
    await page.waitForFunction(() => (globalThis as any).navigator.serviceWorker?.controller?.state === 'activated', undefined, { timeout: 30_000 });
  } catch (err) {
    // Where the worker stood: not registered, installing (its shell fetch), redundant (a fetch failed), or active but not claiming.
    const where = await page
      .evaluate(async () => {
        const sw = (globalThis as any).navigator.serviceWorker;
        const r = await sw?.getRegistration();
        return JSON.stringify({ controller: sw?.controller?.state ?? null, registered: !!r, installing: r?.installing?.state ?? null, waiting: r?.waiting?.state ?? null, active: r?.active?.state ?? null, url: location.href.replace(/#.*/, '') });
      })
      .catch((e: unknown) => `(page not readable: ${String(e)})`);
    throw new Error(`No service worker controls the page after 30 s: ${where}`, { cause: err });
  }
}

/**
 * Resolves once the latest reply is finished (aria-busy false). Up to 20 s by default: a time
 * limit, not an assertion of speed, that three files running side by side on 2 cores must meet.
 */
export async function replyFinished(page: Page, timeout = 20_000): Promise<void> {
  await page.locator('.msg.assistant').last().locator('.reply[aria-busy="false"]').waitFor({ state: 'attached', timeout });
}

/** Counts request-log lines of the relay matching `METHOD path`. */
export function countRequests(relay: TestRelay, method: string, path: string): number {
  return relay.logLines.filter((l) => l.startsWith(`request ${method} ${path} `)).length;
}

/** Pretends the phone's screen went off / came back: visibilityState and the visibilitychange event. */
export async function setVisibility(page: Page, state: 'hidden' | 'visible'): Promise<void> {
  await page.evaluate((s) => {
    const document = (globalThis as any).document;
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => s });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => s === 'hidden' });
    document.dispatchEvent(new Event('visibilitychange'));
  }, state);
}

/** axe-core's serious and critical violations on the page, as `<impact> <rule>: <targets>`. */
export async function axe(page: Page): Promise<string[]> {
  await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  const result = await page.evaluate(async () => (globalThis as any).axe.run(document, { resultTypes: ['violations'] }));
  return (result.violations as { id: string; impact: string; nodes: { target: string[] }[] }[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Makes the next chat stream's body fail after 3 reads with WebKit's `TypeError: Load failed`. */
export const LOAD_FAILED_ONCE = `
  window.__loadFailed = 0;
  const realFetch = window.fetch;
  window.fetch = async function (input, init) {
    const res = await realFetch.call(this, input, init);
    const url = typeof input === 'string' ? input : input.url;
    if (window.__loadFailed > 0 || !String(url).endsWith('/v1/chat/stream')) return res;
    window.__loadFailed = 1;
    const reader = res.body.getReader();
    let reads = 0;
    const body = new ReadableStream({
      async pull(controller) {
        if (reads >= 3) {
          reader.cancel().catch(() => {});
          controller.error(new TypeError('Load failed'));
          return;
        }
        const { value, done } = await reader.read();
        if (done) return controller.close();
        reads += 1;
        controller.enqueue(value);
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };`;

