/**
 * The agent waiting for a decision cannot be missed (issue 38): while any session has an approval
 * pending, the Agent tab and the header carry the count, the page's title reads "(1) DeskRelay",
 * the home-screen icon gets the badge where the browser has one (`navigator.setAppBadge`), and the
 * Chat screen shows a banner; the header's badge and the banner open the waiting card.
 * The count is the desk's (`pending` of each session in `GET /v1/agent/sessions`), read every few
 * seconds while the page is visible and at once when a session's stream shows an approval.
 */
import { el, ui } from '../dom';
import { agentApi } from './api';

const POLL_MS = 5000;
const TITLE = 'DeskRelay';

declare global {
  interface Navigator {
    setAppBadge?(count?: number): Promise<void>;
    clearAppBadge?(): Promise<void>;
  }
}

export interface Attention {
  /** Read the count again now (a session's stream showed an approval or a decision). */
  refresh(): void;
  stop(): void;
}

const waitingWords = (n: number) => `${n} approval${n === 1 ? '' : 's'} waiting`;

export function watchAttention(tab: HTMLElement, open: (sessionId: string) => void): Attention {
  const tabBadge = el('span', 'badge tab-badge');
  tabBadge.hidden = true;
  tab.append(tabBadge);

  const headerBadge = el('button', 'icon attention');
  headerBadge.type = 'button';
  headerBadge.hidden = true;
  ui.newChat.before(headerBadge);

  const banner = el('div', 'attention-banner');
  banner.setAttribute('role', 'status');
  banner.hidden = true;
  const bannerText = el('span', 'attention-text');
  const review = el('button', 'primary attention-review', 'Review');
  review.type = 'button';
  banner.append(bannerText, review);
  ui.chat.prepend(banner);

  let first = '';
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let shown = -1;

  const go = () => {
    if (first) open(first);
  };
  headerBadge.addEventListener('click', go);
  review.addEventListener('click', go);

  function show(count: number): void {
    if (count === shown) return;
    shown = count;
    const words = waitingWords(count);
    tabBadge.hidden = headerBadge.hidden = banner.hidden = count === 0;
    tabBadge.textContent = String(count);
    tabBadge.setAttribute('aria-label', words);
    headerBadge.replaceChildren(el('span', 'badge', String(count)));
    headerBadge.setAttribute('aria-label', `${words}: open`);
    headerBadge.title = words;
    bannerText.textContent = count === 1 ? 'The agent is waiting for your decision.' : `The agent is waiting for ${count} decisions.`;
    document.title = count ? `(${count}) ${TITLE}` : TITLE;
    if (count) void navigator.setAppBadge?.(count).catch(() => undefined);
    else void navigator.clearAppBadge?.().catch(() => undefined);
  }

  async function read(): Promise<void> {
    clearTimeout(timer);
    if (stopped) return;
    if (document.visibilityState === 'visible') {
      try {
        const sessions = await agentApi.sessions();
        if (stopped) return;
        const waiting = sessions.filter((s) => s.pending > 0);
        first = waiting[0]?.id ?? '';
        show(waiting.reduce((n, s) => n + s.pending, 0));
      } catch {
        /* unreachable or refused: keep what is shown; the header says why */
      }
    }
    if (!stopped) timer = setTimeout(() => void read(), POLL_MS);
  }

  const onVisible = () => {
    if (document.visibilityState === 'visible') void read();
  };
  document.addEventListener('visibilitychange', onVisible);
  void read();

  let soon: ReturnType<typeof setTimeout> | undefined;
  return {
    refresh() {
      clearTimeout(soon);
      soon = setTimeout(() => void read(), 150);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(soon);
      document.removeEventListener('visibilitychange', onVisible);
      show(0);
      tabBadge.remove();
      headerBadge.remove();
      banner.remove();
    },
  };
}
