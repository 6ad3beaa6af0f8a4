// @ts-check
/*
 * The desk's view of one agent session (extension/src/agentView.ts): the same events the phone
 * follows. The model's words render as Markdown through the phone's own renderer and sanitiser
 * (media/markdown.js, loaded first); everything else (a tool's output, a command, a diff) is
 * textContent only.
 * Buttons post to the extension, which answers the session in-process; the first answer wins
 * and every screen shows it from the session's `decision` event.
 */
(function () {
  const vscode = acquireVsCodeApi();
  const words = JSON.parse(document.getElementById('words').textContent);
  const log = document.getElementById('log');
  const title = document.getElementById('title');
  const status = document.getElementById('status');
  const stop = document.getElementById('stop');
  const notice = document.getElementById('notice');
  const compose = document.getElementById('compose');
  const message = document.getElementById('message');
  /** @type {{ li: HTMLElement, raw: string } | null} */
  let text = null;
  const tools = new Map();
  const approvals = new Map();

  const el = (tag, className, content) => {
    const n = document.createElement(tag);
    if (className) n.className = className;
    if (content) n.textContent = content;
    return n;
  };

  function diffView(diff) {
    const box = el('div', 'diff');
    let oldNo = 0;
    let newNo = 0;
    const lines = diff.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    for (const line of lines) {
      if (line.startsWith('--- ') || line.startsWith('+++ ')) continue;
      const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
      let kind = 'ctx';
      let a = '';
      let b = '';
      let body = line.slice(1);
      if (hunk) {
        oldNo = Number(hunk[1]);
        newNo = Number(hunk[2]);
        kind = 'hunk';
        body = line;
      } else if (line.startsWith('+')) {
        kind = 'add';
        b = String(newNo++);
      } else if (line.startsWith('-')) {
        kind = 'del';
        a = String(oldNo++);
      } else if (line.startsWith('\\')) {
        kind = 'hunk';
        body = line;
      } else {
        a = String(oldNo++);
        b = String(newNo++);
      }
      const row = el('div', `dl ${kind}`);
      row.append(el('span', 'ln', a), el('span', 'ln', b), el('span', 'sign', kind === 'add' ? '+' : kind === 'del' ? '−' : ''), el('span', 'code', body));
      box.append(row);
    }
    return box;
  }

  function endText() {
    text = null;
  }

  function approvalCard(e) {
    const li = el('li', 'approval');
    li.dataset.callId = e.callId;
    if (e.command !== undefined) {
      li.append(el('h2', '', words.run), el('pre', 'command', e.command), el('p', 'where', words.inFolder));
    } else if (e.diff !== undefined) {
      const path = (/^\+\+\+ b\/(.+)$/m.exec(e.diff) || [])[1] || '';
      li.append(el('h2', '', e.tool === 'write_file' ? words.write : words.edit), el('p', 'path', path), diffView(e.diff));
    } else {
      li.append(el('h2', '', e.tool), el('pre', 'command', JSON.stringify(e.input, null, 2)));
    }
    // Why this asks although something like it was allowed before (an edit ended a command's grant).
    if (e.reason) li.firstChild.after(el('p', 'reason', e.reason));
    const sessionLabel = e.command !== undefined ? words.allowSessionCommand : e.diff !== undefined ? words.allowSessionEdit : words.allowSessionTool;
    const buttons = el('div', 'buttons');
    const make = (decision, label, cls) => {
      const b = el('button', cls, label);
      b.type = 'button';
      b.addEventListener('click', () => vscode.postMessage({ type: 'decide', callId: e.callId, decision }));
      return b;
    };
    buttons.append(make('allow', words.allow, 'primary'), make('deny', words.deny, 'danger'), make('allow_session', sessionLabel, 'secondary'));
    const outcome = el('p', 'outcome');
    outcome.hidden = true;
    li.append(buttons, outcome);
    approvals.set(e.callId, { li, buttons, outcome, diff: e.diff !== undefined, decision: null });
    return li;
  }

  function decided(callId, decision) {
    const a = approvals.get(callId);
    if (!a || a.decision) return;
    a.decision = decision;
    a.buttons.remove();
    a.li.classList.add('decided', decision === 'deny' ? 'denied' : 'allowed');
    a.outcome.hidden = false;
    a.outcome.textContent = decision === 'deny' ? words.denied : decision === 'allow_session' ? words.allowedSession : words.allowed;
  }

  function apply(e) {
    if (e.type !== 'text') endText();
    switch (e.type) {
      case 'user':
        log.append(el('li', 'user', e.text));
        break;
      case 'text':
        if (!text) {
          text = { li: el('li', 'assistant'), raw: '' };
          log.append(text.li);
        }
        text.raw += e.delta;
        text.li.innerHTML = window.deskrelayMarkdown.renderMarkdown(text.raw);
        break;
      case 'tool_call': {
        const li = el('li', 'tool');
        const details = el('details');
        const subject = e.input.command || e.input.path || e.input.query || e.input.pattern || '';
        const summary = el('summary');
        summary.append(el('strong', '', e.tool), el('code', '', typeof subject === 'string' ? subject : ''));
        details.append(summary, el('p', 'label', words.input), el('pre', '', JSON.stringify(e.input, null, 2)));
        li.append(details);
        tools.set(e.callId, details);
        log.append(li);
        break;
      }
      case 'approval':
        log.append(approvalCard(e));
        break;
      case 'decision':
        decided(e.callId, e.decision);
        break;
      case 'tool_result': {
        const details = tools.get(e.callId);
        if (details) {
          details.append(el('p', 'label', words.output), el('pre', '', e.output));
          details.parentElement.classList.add(e.denied ? 'denied' : e.ok ? 'ok' : 'failed');
        }
        const a = approvals.get(e.callId);
        if (a && !a.decision) decided(e.callId, e.denied ? 'deny' : 'allow');
        if (a && a.diff && e.ok) {
          const open = el('button', 'secondary', words.openDiff);
          open.type = 'button';
          open.addEventListener('click', () => vscode.postMessage({ type: 'diff', callId: e.callId }));
          a.li.append(open);
        }
        break;
      }
      case 'error':
        log.append(el('li', 'error', e.message));
        break;
      case 'status':
        status.textContent = words.status[e.status] || e.status;
        status.className = e.status;
        stop.hidden = !(e.status === 'running' || e.status === 'waiting');
        break;
    }
    window.scrollTo(0, document.body.scrollHeight);
  }

  window.addEventListener('message', (m) => {
    const data = m.data;
    if (data.type === 'reset') {
      log.replaceChildren();
      tools.clear();
      approvals.clear();
      text = null;
      title.textContent = data.title || '';
    } else if (data.type === 'event') {
      if (data.event.type === 'user' && !title.textContent) title.textContent = data.event.text.split('\n')[0];
      apply(data.event);
    } else if (data.type === 'probe') {
      // The tests read what the webview shows (the extension host cannot reach its DOM).
      vscode.postMessage({ type: 'rendered', html: log.innerHTML });
    } else if (data.type === 'notice') {
      notice.textContent = data.message;
      notice.hidden = false;
      setTimeout(() => (notice.hidden = true), 6000);
    }
  });
  stop.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
  compose.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!message.value.trim()) return;
    vscode.postMessage({ type: 'send', text: message.value });
    message.value = '';
  });
  message.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) compose.requestSubmit();
  });
  vscode.postMessage({ type: 'ready' });
})();
