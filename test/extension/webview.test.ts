/**
 * The one page writer of the extension's webviews (agent session, chat, pairing): the policy each
 * page is served under and the nonce its scripts need, and the rendered-HTML probe the VS Code
 * suite reads the webviews through. (The pages themselves render in real VS Code: test:vscode.)
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { askRendered, webviewHtml, type WebviewPage } from '../../extension/src/webview';

const CSP_SOURCE = 'https://file+.vscode-resource.vscode-cdn.net';

function page(over: Partial<WebviewPage> = {}): string {
  return webviewHtml({
    cspSource: CSP_SOURCE,
    language: 'en',
    title: 'Agent session',
    stylesheets: [`${CSP_SOURCE}/media/agent-session.css`],
    body: (nonce) => `<ol id="log"></ol><script nonce="${nonce}" src="${CSP_SOURCE}/media/a.js"></script><script nonce="${nonce}">1</script>`,
    ...over,
  });
}

function policy(html: string): Map<string, string> {
  const content = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)?.[1];
  expect(content, 'the page carries its policy').toBeDefined();
  return new Map(content!.split(';').map((d) => d.trim().split(/\s+(.*)/s).slice(0, 2) as [string, string]));
}

describe('webviewHtml', () => {
  it('serves nothing by default; scripts only with this page\'s nonce, which every script of the body carries', () => {
    const html = page();
    const csp = policy(html);
    expect(csp.get('default-src')).toBe("'none'");
    expect(csp.get('style-src')).toBe(CSP_SOURCE);
    expect(csp.has('img-src')).toBe(false);
    const nonce = /^'nonce-([A-Za-z0-9+/]{22}==)'$/.exec(csp.get('script-src')!)?.[1];
    expect(nonce, '16 random bytes, base64').toBeDefined();
    const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    expect(scripts).toHaveLength(2);
    for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
    expect(html).toContain(`<link href="${CSP_SOURCE}/media/agent-session.css" rel="stylesheet">`);
  });

  it('draws a new nonce for every page', () => {
    const nonces = new Set(Array.from({ length: 20 }, () => policy(page()).get('script-src')));
    expect(nonces.size).toBe(20);
  });

  it('allows images (and data: URLs) only where asked, inline styles only with inline CSS', () => {
    const pairing = policy(page({ images: true }));
    expect(pairing.get('img-src')).toBe(`${CSP_SOURCE} data:`);
    expect(pairing.get('style-src')).toBe(CSP_SOURCE);
    const html = page({ stylesheets: undefined, inlineCss: 'body{margin:0}' });
    expect(policy(html).get('style-src')).toBe(`${CSP_SOURCE} 'unsafe-inline'`);
    expect(html).toContain('<style>\nbody{margin:0}\n</style>');
  });

  it('escapes the title and keeps only a language tag\'s letters', () => {
    const html = page({ title: 'Chat </title><script>alert(1)</script>', language: 'en"><script>x</script>' });
    expect(html).toContain('<title>Chat &#60;/title&#62;&#60;script&#62;alert(1)&#60;/script&#62;</title>');
    expect(html).toContain('<html lang="enscriptxscript">');
    expect([...html.matchAll(/<script\b/g)]).toHaveLength(2);
  });
});

describe('askRendered', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function webview() {
    const listeners = new Set<(html: string) => void>();
    const posted: unknown[] = [];
    return {
      posted,
      listeners,
      answer: (html: string) => [...listeners].forEach((l) => l(html)),
      postMessage: (m: unknown) => {
        posted.push(m);
        return Promise.resolve(true);
      },
      event: (l: (html: string) => void) => {
        listeners.add(l);
        return { dispose: () => listeners.delete(l) };
      },
    };
  }

  it("probes the webview and resolves with its answer, then stops listening", async () => {
    const w = webview();
    const asked = askRendered(w, w.event);
    expect(w.posted).toEqual([{ type: 'probe' }]);
    w.answer('<li>hello</li>');
    await expect(asked).resolves.toBe('<li>hello</li>');
    expect(w.listeners.size).toBe(0);
  });

  it("a webview still loading never answers: '' after 2 s, listener gone", async () => {
    vi.useFakeTimers();
    const w = webview();
    const asked = askRendered(w, w.event);
    vi.advanceTimersByTime(1999);
    expect(w.listeners.size).toBe(1);
    vi.advanceTimersByTime(1);
    await expect(asked).resolves.toBe('');
    expect(w.listeners.size).toBe(0);
  });
});
