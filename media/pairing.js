// DeskRelay pairing panel. Renders the state the extension posts; holds no secrets of its own.
// @ts-check
(function () {
  // @ts-ignore acquireVsCodeApi is provided by the webview host
  const vscode = acquireVsCodeApi();
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  let revealed = false;
  let payload = '';

  function render(state) {
    $('stopped').hidden = state.running;
    $('running').hidden = !state.running;
    payload = state.payload || '';
    if (state.running) {
      /** @type {HTMLImageElement} */ ($('qr')).src = state.qr || '';
      $('url').textContent = state.url || '';
      $('tunnel').textContent = state.tunnel;
      $('start-tunnel').hidden = state.viaTunnel || state.tunnel === 'starting';
    }
    $('payload').textContent = revealed ? payload : '';
    $('payload').hidden = !revealed;
    $('reveal').textContent = revealed ? 'Hide pairing JSON' : 'Reveal pairing JSON';
    const list = $('warnings');
    list.replaceChildren(
      ...(state.warnings || []).map((w) => {
        const li = document.createElement('li');
        li.textContent = w;
        return li;
      }),
    );
  }

  window.addEventListener('message', (event) => {
    const m = event.data;
    if (m && m.type === 'state') render(m.state);
  });
  $('reveal').addEventListener('click', () => {
    revealed = !revealed;
    $('payload').textContent = revealed ? payload : '';
    $('payload').hidden = !revealed;
    $('reveal').textContent = revealed ? 'Hide pairing JSON' : 'Reveal pairing JSON';
  });
  $('copy').addEventListener('click', () => vscode.postMessage({ type: 'copy' }));
  $('start-tunnel').addEventListener('click', () => vscode.postMessage({ type: 'startTunnel' }));
  $('start').addEventListener('click', () => vscode.postMessage({ type: 'start' }));
  vscode.postMessage({ type: 'ready' });
})();
