// Extension activation time without a real VS Code: require('dist/extension.js') and call
// activate() against a minimal stub of the `vscode` API (default settings, so autoStart is off).
// Prints one JSON line { requireMs, activateMs, commands }. A real extension host adds its own
// loading around this; bench/RESULTS.md says so.
const Module = require('node:module');
const { join } = require('node:path');
const { tmpdir } = require('node:os');

const commands = new Map();
/** Anything: callable, constructible, every property another anything; not a thenable. */
function anything() {
  const fn = function () {};
  const assigned = new Map();
  return new Proxy(fn, {
    set(_t, key, value) {
      assigned.set(key, value);
      return true;
    },
    get(_t, key) {
      if (assigned.has(key)) return assigned.get(key);
      if (key === 'then') return undefined;
      if (key === Symbol.toPrimitive) return () => '';
      if (key === 'dispose') return () => {};
      return anything();
    },
    apply: () => anything(),
    construct: () => anything(),
  });
}
class Disposable {
  constructor(fn) {
    this.fn = fn;
  }
  static from(...ds) {
    return new Disposable(() => ds.forEach((d) => d.dispose?.()));
  }
  dispose() {
    this.fn?.();
  }
}
class EventEmitter {
  listeners = new Set();
  event = (listener) => {
    this.listeners.add(listener);
    return new Disposable(() => this.listeners.delete(listener));
  };
  fire(value) {
    for (const l of this.listeners) l(value);
  }
  dispose() {
    this.listeners.clear();
  }
}
const storage = join(tmpdir(), `deskrelay-activation-${process.pid}`);
const vscode = new Proxy(
  {
    // Real own properties: the bundle's `import * as vscode` copies own keys only.
    window: anything(),
    env: anything(),
    extensions: anything(),
    languages: anything(),
    // vscode.l10n.t: the message with {0}-style (or {name}) arguments filled in, as VS Code does.
    l10n: {
      t: (message, ...args) => {
        const text = typeof message === 'string' ? message : message.message;
        const named = args.length === 1 && typeof args[0] === 'object' && args[0] !== null ? args[0] : undefined;
        return text.replace(/\{([^}]+)\}/g, (m, key) => String((named ? named[key] : args[Number(key)]) ?? m));
      },
      bundle: undefined,
      uri: undefined,
    },
    Disposable,
    EventEmitter,
    Uri: { file: (p) => ({ fsPath: p, path: p }), joinPath: (base, ...parts) => ({ fsPath: join(base.fsPath, ...parts), path: join(base.fsPath, ...parts) }), parse: (s) => ({ fsPath: s, toString: () => s }) },
    StatusBarAlignment: { Left: 1, Right: 2 },
    // Read at load by the agent's diagnostics (issue 23) and the desk views (issues 25, 30).
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    ThemeIcon: class {
      constructor(id) {
        this.id = id;
      }
    },
    TreeItem: class {
      constructor(label) {
        this.label = label;
      }
    },
    lm: anything(),
    ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
    ViewColumn: { Active: -1, Beside: -2, One: 1 },
    ProgressLocation: { Notification: 15, Window: 10 },
    ThemeColor: class {},
    MarkdownString: class {
      constructor(v = '') {
        this.value = v;
      }
      appendMarkdown(v) {
        this.value += v;
        return this;
      }
      appendText(v) {
        this.value += v;
        return this;
      }
      appendCodeblock(v) {
        this.value += v;
        return this;
      }
    },
    workspace: new Proxy(
      {
        getConfiguration: () => ({ get: (_k, d) => d, has: () => false, inspect: () => undefined, update: async () => {} }),
        onDidChangeConfiguration: () => new Disposable(),
        workspaceFolders: [],
      },
      { get: (t, k) => (k in t ? t[k] : anything()) },
    ),
    commands: {
      registerCommand: (id, fn) => {
        commands.set(id, fn);
        return new Disposable(() => commands.delete(id));
      },
      executeCommand: async () => undefined,
    },
  },
  { get: (t, k) => (k in t ? t[k] : anything()) },
);

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === 'vscode' ? 'vscode' : resolveFilename.call(this, request, ...rest);
};
require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscode };

const context = {
  subscriptions: [],
  secrets: { get: async () => undefined, store: async () => {}, delete: async () => {}, onDidChange: () => new Disposable() },
  globalState: { get: (_k, d) => d, update: async () => {}, keys: () => [] },
  workspaceState: { get: (_k, d) => d, update: async () => {}, keys: () => [] },
  globalStorageUri: { fsPath: storage, path: storage },
  extensionUri: { fsPath: join(__dirname, '..'), path: join(__dirname, '..') },
  extensionPath: join(__dirname, '..'),
  extension: { packageJSON: require('../package.json') },
  asAbsolutePath: (p) => join(__dirname, '..', p),
};

(async () => {
  const t0 = process.hrtime.bigint();
  const ext = require('../dist/extension.js');
  const t1 = process.hrtime.bigint();
  await ext.activate(context);
  const t2 = process.hrtime.bigint();
  const registered = commands.size;
  await ext.deactivate?.();
  for (const d of context.subscriptions) d?.dispose?.();
  process.stdout.write(`${JSON.stringify({ requireMs: Number(t1 - t0) / 1e6, activateMs: Number(t2 - t1) / 1e6, commands: registered })}\n`);
  process.exit(0);
})().catch((err) => {
  process.stderr.write(`activation failed: ${err.stack ?? err}\n`);
  process.exit(1);
});
