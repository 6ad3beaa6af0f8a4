// DeskRelay pairing panel. Renders the state the extension posts; holds no secrets of its own.
// @ts-check
(function () {
  // @ts-expect-error acquireVsCodeApi is provided by the webview host
  const vscode = acquireVsCodeApi();
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  let revealed = false;
  let payload = '';
  let link = '';

  function showSecret() {
    $('payload').textContent = revealed ? payload : '';
    $('payload').hidden = !revealed;
    $('link').textContent = revealed ? link : '';
    $('link').hidden = !revealed;
    // The labels come localized from the extension, on the button itself.
    $('reveal').textContent = (revealed ? $('reveal').dataset.hide : $('reveal').dataset.reveal) || '';
  }

  function render(state) {
    $('stopped').hidden = state.running;
    $('running').hidden = !state.running;
    payload = state.payload || '';
    link = state.link || '';
    if (state.running) {
      /** @type {HTMLImageElement} */ ($('qr')).src = state.qr || '';
      /** @type {HTMLImageElement} */ ($('link-qr')).src = state.linkQr || '';
      $('url').textContent = state.url || '';
      $('tunnel').textContent = state.tunnel;
      $('start-tunnel').hidden = state.viaTunnel || state.tunnel === 'starting';
      /** @type {HTMLInputElement} */ ($('phone-switch')).checked = state.phoneSwitch === true;
    }
    showSecret();
    const devices = state.devices || [];
    $('no-devices').hidden = devices.length > 0;
    $('devices').replaceChildren(
      ...devices.map((d) => {
        const li = document.createElement('li');
        li.className = d.connected ? 'connected' : '';
        const name = document.createElement('strong');
        name.textContent = d.name;
        li.append(name, ` · ${d.status}`);
        return li;
      }),
    );
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
    showSecret();
  });
  $('copy').addEventListener('click', () => vscode.postMessage({ type: 'copy' }));
  $('start-tunnel').addEventListener('click', () => vscode.postMessage({ type: 'startTunnel' }));
  $('start').addEventListener('click', () => vscode.postMessage({ type: 'start' }));
  $('manage-devices').addEventListener('click', () => vscode.postMessage({ type: 'manageDevices' }));
  $('phone-switch').addEventListener('change', (e) =>
    vscode.postMessage({ type: 'phoneSwitch', on: /** @type {HTMLInputElement} */ (e.target).checked }),
  );
  vscode.postMessage({ type: 'ready' });
})();
