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
  const ended = document.getElementById('ended');
  const changes = document.getElementById('changes');
  const changeList = changes.querySelector('ol');
  /** Messages sent while the model worked, shown until they join the conversation. */
  const queued = [];
  /** callId → the edit's card and its row in the Changes list. */
  const applied = new Map();
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

  const pathOf = (diff) => (/^\+\+\+ b\/(.+)$/m.exec(diff) || [])[1] || '';

  function button(label, cls, onClick) {
    const b = el('button', cls, label);
    b.type = 'button';
    b.addEventListener('click', onClick);
    return b;
  }

  /** An applied edit: Open diff and Revert on its card and in the Changes list. */
  function changeApplied(callId, diff, output, card) {
    const path = pathOf(diff);
    let li = card;
    if (!li) {
      // Granted for the session: no card asked, so one shows what was done.
      li = el('li', 'approval decided allowed change');
      li.append(el('h2', '', words.edited), el('p', 'path', path), diffView(diff));
      log.append(li);
    }
    li.append(el('p', 'result', output));
    const actions = el('div', 'buttons');
    const revert = () => vscode.postMessage({ type: 'revert', callId });
    actions.append(button(words.openDiff, 'secondary', () => vscode.postMessage({ type: 'diff', callId })), button(words.revert, 'secondary', revert));
    li.append(actions);
    const row = el('li', 'change-row');
    const rowActions = el('span', 'buttons');
    rowActions.append(button(words.openDiff, 'secondary', () => vscode.postMessage({ type: 'diff', callId })), button(words.revert, 'secondary', revert));
    row.append(el('code', '', path), rowActions);
    changeList.append(row);
    applied.set(callId, { li, actions, row, rowActions, path });
    changes.hidden = false;
    changes.querySelector('summary').textContent = `${words.changes} (${applied.size})`;
  }

  function reverted(callId, path) {
    const a = applied.get(callId);
    if (a) {
      a.actions.querySelectorAll('button')[1].remove();
      a.rowActions.querySelectorAll('button')[1].remove();
      a.li.classList.add('reverted');
      a.row.classList.add('reverted');
      a.li.append(el('p', 'outcome reverted', words.reverted));
      a.row.append(el('span', 'outcome reverted', words.reverted));
    }
    log.append(el('li', 'line reverted', words.revertedLine.replace('{0}', path || (a && a.path) || '')));
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
    buttons.append(button(words.denyNote, 'secondary', () => vscode.postMessage({ type: 'denyNote', callId: e.callId })));
    // Review before deciding: the change in VS Code's diff editor, beside this view, nothing written.
    if (e.diff !== undefined) buttons.prepend(button(words.openProposed, 'secondary', () => vscode.postMessage({ type: 'proposed', callId: e.callId })));
    const outcome = el('p', 'outcome');
    outcome.hidden = true;
    li.append(buttons, outcome);
    approvals.set(e.callId, { li, buttons, outcome, diff: e.diff !== undefined, decision: null });
    return li;
  }

  function decided(callId, decision, note) {
    const a = approvals.get(callId);
    if (!a || a.decision) return;
    a.decision = decision;
    a.buttons.remove();
    a.li.classList.add('decided', decision === 'deny' ? 'denied' : 'allowed');
    a.outcome.hidden = false;
    a.outcome.textContent = decision === 'deny' ? words.denied : decision === 'allow_session' ? words.allowedSession : words.allowed;
    if (note) a.outcome.after(el('p', 'note', words.noteSaid.replace('{0}', note)));
  }

  function apply(e) {
    if (e.type !== 'text') endText();
    switch (e.type) {
      case 'user':
        // A queued message joined the conversation: it is shown where it joined.
        if (queued.length && queued[0].text === e.text) queued.shift().li.remove();
        log.append(el('li', 'user', e.text));
        break;
      case 'queued': {
        const li = el('li', 'user queued', e.text);
        li.append(el('span', 'queued-label', words.queued));
        queued.push({ text: e.text, li });
        log.append(li);
        break;
      }
      case 'reverted':
        reverted(e.callId, e.path);
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
        decided(e.callId, e.decision, e.note);
        break;
      case 'tool_result': {
        const details = tools.get(e.callId);
        if (details) {
          details.append(el('p', 'label', words.output), el('pre', '', e.output));
          details.parentElement.classList.add(e.denied ? 'denied' : e.ok ? 'ok' : 'failed');
        }
        const a = approvals.get(e.callId);
        if (a && !a.decision) decided(e.callId, e.denied ? 'deny' : 'allow');
        if (e.ok && e.diff) changeApplied(e.callId, e.diff, e.output, a && a.li);
        break;
      }
      case 'error':
        log.append(el('li', 'error', e.message));
        break;
      case 'status':
        if (e.status === 'stopped') log.append(el('li', 'line stopped', words.stoppedLine));
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
      applied.clear();
      queued.length = 0;
      changeList.replaceChildren();
      changes.hidden = true;
      text = null;
      title.textContent = data.title || '';
    } else if (data.type === 'event') {
      if (data.event.type === 'user' && !title.textContent) title.textContent = data.event.text.split('\n')[0];
      apply(data.event);
    } else if (data.type === 'probe') {
      // The tests read what the webview shows (the extension host cannot reach its DOM).
      const banner = ended.hidden ? '' : `<p id="ended">${ended.textContent}</p>`;
      vscode.postMessage({ type: 'rendered', html: banner + (changes.hidden ? '' : changes.outerHTML) + log.innerHTML });
    } else if (data.type === 'ended') {
      // Stays: the session is gone, and why (the agent turned off at the desk, deleted, the relay stopped).
      ended.textContent = data.message;
      ended.hidden = false;
      stop.hidden = true;
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
    // As in VS Code's chat: Enter sends, Shift+Enter is a new line (never mid-composition).
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      compose.requestSubmit();
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
