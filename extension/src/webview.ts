/**
 * How DeskRelay's webviews (an agent session, a chat, the pairing panel) write their page, so
 * each gets the same strict Content-Security-Policy: nothing by default, scripts only with this
 * page's fresh nonce, styles (and, where asked, images) from the extension's own media. Imports
 * nothing of VS Code at run time: the callers hand over the webview's cspSource and URIs.
 */
import { randomBytes } from 'node:crypto';
import type * as vscode from 'vscode';

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export interface WebviewPage {
  /** The webview's `cspSource`: where its own media come from. */
  cspSource: string;
  /** VS Code's display language (`vscode.env.language`), for `<html lang>`. */
  language: string;
  /** Plain text, escaped here. */
  title: string;
  /** Stylesheets (webview URIs) linked in the head. */
  stylesheets?: readonly string[];
  /** CSS written into the head; the policy then allows inline styles. */
  inlineCss?: string;
  /** Images from the media folder and `data:` URLs (the pairing QR codes). */
  images?: boolean;
  /** The body's HTML; every `<script>` in it carries `nonce="${nonce}"`. */
  body(nonce: string): string;
}

export function webviewHtml(page: WebviewPage): string {
  const nonce = randomBytes(16).toString('base64');
  const csp = [
    "default-src 'none'",
    ...(page.images ? [`img-src ${page.cspSource} data:`] : []),
    `style-src ${page.cspSource}${page.inlineCss === undefined ? '' : " 'unsafe-inline'"}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  const styles = [
    ...(page.stylesheets ?? []).map((href) => `  <link href="${escapeHtml(href)}" rel="stylesheet">`),
    ...(page.inlineCss === undefined ? [] : [`  <style>\n${page.inlineCss}\n</style>`]),
  ];
  return `<!DOCTYPE html>
<html lang="${page.language.replace(/[^\w-]/g, '')}">
<head>
  <meta charset="UTF-8">
  <meta http-equiv="Content-Security-Policy" content="${csp}">
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
${styles.join('\n')}
  <title>${escapeHtml(page.title)}</title>
</head>
<body>
${page.body(nonce)}
</body>
</html>`;
}

/**
 * Tests only: what a webview shows now (its HTML), asked of the webview itself: its page answers
 * a `probe` message with a `rendered` one, which the caller feeds to `answers`. A webview still
 * loading drops the probe: then '' after a moment, and the caller asks again.
 */
export function askRendered(webview: Pick<vscode.Webview, 'postMessage'>, answers: vscode.Event<string>): Promise<string> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      once.dispose();
      resolve('');
    }, 2000);
    const once = answers((html) => {
      clearTimeout(timer);
      once.dispose();
      resolve(html);
    });
    void webview.postMessage({ type: 'probe' });
  });
}
