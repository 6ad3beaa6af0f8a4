/**
 * The installable app: the service worker (web/sw/sw.ts, served as /sw.js) keeps the app shell so
 * the page opens without the desktop. A browser without service workers (or an insecure origin:
 * plain http to a LAN address) just goes without; nothing else depends on it.
 */
export function registerServiceWorker(): void {
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return;
  navigator.serviceWorker.register('sw.js', { scope: './' }).catch(() => {
    /* private mode or a policy may refuse: the page works online as before */
  });
}
