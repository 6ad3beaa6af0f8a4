import type { IncomingMessage } from 'node:http';
import { AgentCatalog, OWN_AGENT } from '../../agent/acp/agents';
import { acpEngine } from '../../agent/acp/engine';
import { commandEnv } from '../../agent/commandEnv';
import { EngineOptionError, type EngineFactory } from '../../agent/engine';
import type { AgentHost } from '../../agent/host';
import { DEFAULT_LIMITS, type AgentLimits } from '../../agent/limits';
import { NotPendingError } from '../../agent/gate';
import { actionMessage, approvalMessage, DECISIONS, MAX_NOTE, PATHS, type SignedAction, type AgentSessionCreated, type AgentSessionSummary, type Decision } from '../../protocol';
import { SessionStore, type AgentSession } from '../../agent/session';
import { WorkspaceError, type Workspace } from '../../agent/workspace';
import { addWorktree, currentBranch, mergeCommand, removeWorktree, worktreesDir } from '../../agent/worktrees';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';
import { AgentSessionKeep, agentSessionsDir } from '../../store/agentSessions';
import { HttpError } from '../../http/errors';
import type { ContextSlice, DoorRoute } from '../context';
import { followLog, sendJson, sendNoContent } from '../../http/writers';
import type { RouteRequest } from '../../http/route';
import { type DoorFactory, itemPaths } from '../door';
import { invalidBody as invalid, jsonObject, readJsonBody } from '../../http/request';
import { verifySigned } from '../../store/devices';
import { fresh, issuedAtMs, TakenOnce, tooManySigned } from '../takenOnce';
import { ChangedOutsideError, ChangesBook, NotChangedError, normalPath } from '../../agent/changes';

/** The door's paths (docs/agent.md). */
export const AGENT_FOLDERS_PATH = PATHS.agentFolders;
export const AGENT_SESSIONS_PATH = PATHS.agentSessions;
export const AGENT_FILES_PATH = PATHS.agentFiles;
export const AGENT_AGENTS_PATH = PATHS.agentAgents;
/** The `@` suggestions answer at most this many paths: a phone shows a handful, not the tree. */
export const MAX_FILE_SUGGESTIONS = 50;
const { one: SESSION, events: EVENTS, messages: MESSAGES, stop: STOP, sub } = itemPaths(AGENT_SESSIONS_PATH);
const APPROVAL = sub('approvals/:callId');
const MERGE = sub('merge');
const DISCARD = sub('discard');
const MODE = sub('mode');
const MODEL = sub('model');
const CHANGES = sub('changes');
const UNDO = sub('changes/undo');

const DEFAULT_HOW_TO_ENABLE = 'Turn it on at the desk: `deskrelay serve --agent DIR` (or "agent": {"folders": [...]} in config.json).';

const defaultHowToAllow = (id: string) => `VS Code: the notification, or DeskRelay: Manage Devices; CLI: deskrelay devices allow ${id}.`;

const notPending = () => new HttpError(409, 'agent.not_pending', 'No approval is waiting for that call: it was already decided, the session was stopped, or the id is unknown.');

const notFound = () => new HttpError(404, 'agent.not_found', 'No agent session by that id: it was deleted, dropped to make room, or the desktop relay restarted.');

const changedOutside = (path: string) =>
  new HttpError(409, 'agent.changed_outside', `${path} changed since the session's last change to it (outside the session): Undo would lose that. Nothing was changed; take it back by hand.`);

function nonEmptyString(body: Record<string, unknown>, name: string, shape: string): string {
  const value = body[name];
  if (typeof value !== 'string' || value.trim() === '') throw invalid(`"${name}" must be a non-empty string: ${shape}.`);
  return value;
}

/**
 * The workspace agent's door (issue 23): sessions in the desktop's folders, their events as a
 * resumable SSE stream, the user's messages and decisions. A thin adapter over the agent's
 * session store; off (403 agent.disabled) unless the host names folders.
 */
export interface AgentDoorOptions {
  /** The workspace agent: its folders, asked on every request. Absent or no folders: every /v1/agent path answers 403 agent.disabled. */
  agent?: AgentHost;
  /** Keep conversations on the desktop (the same opt-in keeps agent sessions), asked when the relay starts. */
  keepConversations?: () => boolean;
}

/**
 * What the agent door reads of the relay: the chat service (the sessions' model calls), `replies`
 * (its pushes, its sessions in the conversation list), the devices (who may drive it, their
 * keys), bodies, request state, where it keeps sessions and worktrees, the log, keep-alives.
 */
export type AgentDoorContext = ContextSlice<'chat' | 'replies' | 'admission' | 'bodies' | 'state', 'configDir' | 'logger' | 'bodyTimeoutMs' | 'keepAliveMs' | 'clock', AgentDoorOptions>;
type AgentRoute = DoorRoute<AgentDoorContext>;

export const agentDoor: DoorFactory<AgentDoorContext> = (ctx) => {
  const host: AgentHost | undefined = ctx.options.agent;
  const limits: AgentLimits = { ...DEFAULT_LIMITS, ...host?.limits };
  const { logger } = ctx.options;
  const changes = new ChangesBook(logger);
  const taken = new TakenOnce();
  const store = new SessionStore({ chat: ctx.chat, limits, logger, push: (payload) => ctx.replies.agentPush(payload), tools: () => host?.tools?.() ?? [] });
  ctx.replies.agentSessions = () =>
    (host?.workspaces().length ?? 0) === 0 ? [] : store.list().map((s) => ({ id: s.id, title: s.title, updatedAt: s.updatedAt, preview: `${s.folder} · ${s.status}` }));
  host?.attach?.(store);
  // Sessions kept on the desktop (with keepConversations) are read back before the door answers.
  const loading: Promise<void> =
    ctx.options.keepConversations?.() === true && (host?.workspaces().length ?? 0) > 0
      ? AgentSessionKeep.open(agentSessionsDir(ctx.options.configDir), logger)
          .then(({ keep, sessions }) => {
            changes.keepWith(keep);
            store.keep(keep, sessions, (r) => {
              const folder = host?.workspaces().find((w) => w.name === r.folder);
              if (!r.worktree) return folder && changes.track(r.id, folder);
              // Only a worktree of DeskRelay's own folder, as it made them: a file naming another place is not followed.
              const own = relative(worktreesDir(ctx.options.configDir), r.worktree.path);
              if (own === '' || own.startsWith('..') || isAbsolute(own) || own.includes(sep)) return undefined;
              const tree = existsSync(r.worktree.path) ? folder?.worktree?.(r.worktree.path) : undefined;
              return tree && changes.track(r.id, tree);
            }, agentFor);
          })
          .catch((err: unknown) => logger.error(`agent sessions: cannot read ${agentSessionsDir(ctx.options.configDir)} (${(err as NodeJS.ErrnoException).code ?? 'error'}); sessions are not kept this run`))
      : Promise.resolve();
  const acpEnv = () => host?.acpEnv?.() ?? commandEnv(process.env);
  // git for worktrees starts from the same scrubbed environment (runSafeGit drops every GIT_* too).
  const gitEnv = acpEnv;
  const catalog = new AgentCatalog({ configured: () => host?.acpAgents?.() ?? {}, env: acpEnv });
  function agentFor(id: string): { id: string; engine: EngineFactory } | undefined {
    const spec = catalog.specs().get(id);
    return spec ? { id: spec.id, engine: acpEngine(spec, acpEnv) } : undefined;
  }

  /** The folders in force; the agent turned off meanwhile ends every session. */
  const folders = (): readonly Workspace[] => {
    const list = host?.workspaces() ?? [];
    if (list.length === 0) {
      void store.closeAll();
      throw new HttpError(403, 'agent.disabled', `The workspace agent is off on the desktop. ${host?.howToEnable ?? DEFAULT_HOW_TO_ENABLE}`);
    }
    return list;
  };
  const session = (req: RouteRequest): AgentSession => {
    folders();
    const found = store.get(req.params.id ?? '');
    if (!found) throw notFound();
    return found;
  };

  /**
   * Who may drive the agent (issue 36): with approvals "device" (the default) only a device the
   * desk allowed; the pairing token never, so a leaked pairing payload cannot run code. A
   * device's first request tells the desk, which answers with Allow or Deny.
   */
  const mayDrive = (req: IncomingMessage, c: AgentDoorContext): void => {
    const list = folders();
    if ((host?.approvals?.() ?? 'device') === 'token') return;
    const id = c.state(req).device;
    const devices = c.admission.devices;
    const device = id === undefined ? undefined : devices?.get(id);
    if (device?.agent === 'allowed') return;
    const how = id === undefined ? undefined : (host?.howToAllow?.(id) ?? defaultHowToAllow(id));
    if (id === undefined || !device) {
      throw new HttpError(403, 'agent.device_not_allowed', `The agent answers only phones the desk allowed, and the pairing token is not one: pair this client as a device, then allow it at the desk (VS Code: the notification or DeskRelay: Manage Devices; CLI: deskrelay devices allow <id>).`);
    }
    if (device.agent === 'denied') throw new HttpError(403, 'agent.device_not_allowed', `The desk did not allow this phone to use the agent. To allow it: ${how}`);
    devices!.askAgent(id, list.map((w) => w.name));
    throw new HttpError(403, 'agent.device_not_allowed', `This phone may not use the agent until the desk allows it; the desk was asked. To allow it: ${how}`);
  };

  /**
   * With approvals "device": the body's `signature` must be the asking device's over `message()`
   * (CONTRACT §9); `nothing` ends each refusal (what was not done). `message` may refuse too (the
   * call is not pending, the time is stale). Gives the device and the text it signed; nothing
   * with token approvals (no check).
   */
  const requireSignature = async (req: IncomingMessage, c: AgentDoorContext, body: Record<string, unknown>, message: () => string, words: { what: string; nothing: string; bad: string }): Promise<{ device: string; text: string } | undefined> => {
    if ((host?.approvals?.() ?? 'device') !== 'device') return undefined;
    const device = c.admission.devices?.get(c.state(req).device ?? '');
    if (typeof body.signature !== 'string' || body.signature === '') {
      throw new HttpError(403, 'agent.signature_required', `${words.what} must be signed with this phone's key ("signature"); ${words.nothing}.`);
    }
    if (!device?.publicKey) {
      throw new HttpError(403, 'agent.signature_required', `This phone registered no key, so its requests cannot be verified: pair it again from the DeskRelay web app. ${words.nothing[0]!.toUpperCase()}${words.nothing.slice(1)}.`);
    }
    const text = message();
    if (!(await verifySigned(device.publicKey, body.signature, text))) {
      logger.warn(`agent: a signed request (${text.slice(0, text.indexOf('\n'))}) from ${device.id} did not verify; ${words.nothing}`);
      throw new HttpError(403, 'agent.bad_signature', `${words.bad}; ${words.nothing}.`);
    }
    return { device: device.id, text };
  };

  /**
   * A session action a phone signs (not a decision, which names its one card): over the action,
   * the session, `subject` and the body's `issuedAt`, which must be within the window; the
   * device's signed text is taken once, so a captured request sent again does nothing.
   */
  const requireSignedAction = async (req: IncomingMessage, c: AgentDoorContext, body: Record<string, unknown>, action: SignedAction, s: AgentSession, subject: string[], words: { what: string; nothing: string; bad: string }): Promise<void> => {
    const now = c.options.clock?.() ?? Date.now();
    const at = issuedAtMs(body.issuedAt);
    const signed = await requireSignature(
      req,
      c,
      body,
      () => {
        if (Number.isNaN(at)) throw invalid(`"issuedAt" must be when the phone signed this, as ISO 8601 UTC ("${new Date(now).toISOString()}"); ${words.nothing}.`);
        if (!fresh(at, now)) throw new HttpError(403, 'agent.bad_signature', `The signature was not made within 5 minutes of the desktop's clock (check both clocks); ${words.nothing}.`);
        return actionMessage(action, s.id, body.issuedAt as string, ...subject);
      },
      words,
    );
    if (!signed) return;
    const taking = taken.take(`${signed.device}\n${signed.text}`, at, now);
    if (taking === 'used') throw new HttpError(403, 'agent.bad_signature', `This signed request was sent before, and a signature is taken once; ${words.nothing}.`);
    if (taking === 'full') throw tooManySigned(words.nothing);
  };

  /** A session action a phone signs (discard, merge, delete, mode, model): the JSON body, empty when none came. */
  const signedAction = async (req: IncomingMessage, c: AgentDoorContext, action: SignedAction, s: AgentSession, shape: string): Promise<Record<string, unknown>> => {
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    const body = hasBody ? jsonObject((await readJsonBody(req, c)).json, shape) : {};
    const words = { what: `This request (${action})`, nothing: 'nothing was done', bad: `The signature does not match ${action} on this session with this phone's key` };
    await requireSignedAction(req, c, body, action, s, [], words);
    return body;
  };

  const route = (method: AgentRoute['method'], path: string, handle: AgentRoute['handle']): AgentRoute => ({
    method,
    path,
    auth: true,
    handle: async (req, res, c) => {
      await loading;
      mayDrive(req, c);
      return handle(req, res, c);
    },
  });

  const listFolders = route('GET', AGENT_FOLDERS_PATH, (_req, res) => {
    const servers = host?.toolServers?.() ?? [];
    sendJson(res, 200, { folders: folders().map((w) => ({ name: w.name, ...(w.displayPath ? { path: w.displayPath } : {}) })), ...(servers.length > 0 ? { toolServers: servers } : {}) });
  });

  // The composer's `@` suggestions: the same listing the model's list_files gets (its .gitignore
  // and deny rules, its cap), filtered by what the user typed; names only, never contents.
  const listFiles = route('GET', AGENT_FILES_PATH, async (req, res) => {
    const list = folders();
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    const name = query.get('folder');
    const q = (query.get('q') ?? '').trim().toLowerCase();
    const workspace = name === null || name === '' ? list[0]! : list.find((w) => w.name === name);
    if (!workspace) throw new HttpError(404, 'agent.not_found', `No agent folder by that name: "folder" must be one of the folders GET /v1/agent/folders lists: ${list.map((w) => JSON.stringify(w.name)).join(', ')}.`);
    const listed = await workspace.listFiles({ maxEntries: limits.maxListEntries });
    const matches = q ? rankFiles(listed.files, q) : listed.files;
    sendJson(res, 200, { folder: workspace.name, files: matches.slice(0, MAX_FILE_SUGGESTIONS), truncated: matches.length > MAX_FILE_SUGGESTIONS || listed.truncated });
  });

  const createSession = route('POST', AGENT_SESSIONS_PATH, async (req, res, c) => {
    const list = folders();
    const shape = '{"prompt": "…", "folder"?: "<a name from GET /v1/agent/folders>", "agent"?: "<an id from GET /v1/agent/agents>"}';
    const body = jsonObject((await readJsonBody(req, c)).json, shape);
    const prompt = nonEmptyString(body, 'prompt', shape);
    let workspace = list[0]!;
    if (body.folder !== undefined) {
      const named = list.find((w) => w.name === body.folder);
      if (!named) throw invalid(`"folder" must be one of the folders GET /v1/agent/folders lists: ${list.map((w) => JSON.stringify(w.name)).join(', ')}.`);
      workspace = named;
    }
    let agent: Parameters<SessionStore['create']>[1];
    if (body.agent !== undefined && body.agent !== OWN_AGENT.id) {
      const specs = catalog.specs();
      const spec = typeof body.agent === 'string' ? specs.get(body.agent) : undefined;
      if (!spec) throw invalid(`"agent" must be one of the agents GET /v1/agent/agents lists: ${[OWN_AGENT.id, ...specs.keys()].map((id) => JSON.stringify(id)).join(', ')}.`);
      if (workspace.absolutePath === undefined) throw invalid(`The folder "${workspace.name}" is not on this desktop's disk; an ACP agent cannot run there.`);
      const info = await catalog.check(spec, workspace.absolutePath);
      if (!info.available) throw invalid(`${spec.name} is not available: ${info.reason}`);
      agent = { id: spec.id, engine: acpEngine(spec, acpEnv) };
    }
    if (body.worktree !== undefined && typeof body.worktree !== 'boolean') throw invalid('"worktree" must be true or false.');
    const id = randomUUID();
    let worktree: AgentSession['worktree'];
    let where = workspace;
    if (body.worktree === true) {
      if (!workspace.worktree || workspace.absolutePath === undefined) throw invalid(`The folder "${workspace.name}" cannot have worktrees on this desktop.`);
      try {
        worktree = await addWorktree(workspace.absolutePath, ctx.options.configDir, workspace.name, id.slice(0, 8), gitEnv());
      } catch (err) {
        if (err instanceof WorkspaceError) throw invalid(err.message);
        throw err;
      }
      const into = await currentBranch(worktree.project, gitEnv());
      worktree = { ...worktree, ...(into ? { into } : {}) };
      where = workspace.worktree(worktree.path);
    }
    const created = store.create(changes.track(id, where), agent, { id, ...(worktree ? { worktree } : {}) });
    if (!created) {
      if (worktree) await removeWorktree(worktree, gitEnv()).catch(() => {});
      throw new HttpError(429, 'agent.too_many_sessions', `All ${limits.maxSessions} agent sessions the desktop keeps are working; stop or delete one first.`, { 'Retry-After': '5' });
    }
    logger.info(`agent ${created.id.slice(0, 8)}: session started in folder ${JSON.stringify(workspace.name)} with agent ${created.agent}${worktree ? ` in worktree ${worktree.branch}` : ''}`);
    created.send(prompt);
    sendJson(res, 201, { id: created.id, folder: workspace.name, agent: created.agent, ...(worktree ? { worktree: { branch: worktree.branch, path: worktree.path, ...(worktree.into ? { into: worktree.into } : {}) } } : {}) } satisfies AgentSessionCreated);
  });

  const listSessions = route('GET', AGENT_SESSIONS_PATH, (_req, res) => {
    folders();
    sendJson(res, 200, {
      sessions: store.list().map((s): AgentSessionSummary => ({ id: s.id, agent: s.agent, folder: s.folder, title: s.title, status: s.status, pending: s.pendingCount, updatedAt: new Date(s.updatedAt).toISOString(), ...(s.instructionsFile ? { instructions: s.instructionsFile } : {}), ...(s.worktree ? { worktree: { branch: s.worktree.branch, ...(s.worktree.into ? { into: s.worktree.into } : {}) } } : {}) })),
    });
  });

  const getSession = route('GET', SESSION, (req, res) => sendJson(res, 200, session(req).snapshot()));

  const deleteSession = route('DELETE', SESSION, async (req, res, c) => {
    const s = session(req);
    await signedAction(req, c, 'delete', s, '{"signature": "<base64url>", "issuedAt": "<ISO 8601 UTC>"}');
    store.delete(s.id);
    logger.info(`agent ${s.id.slice(0, 8)}: session deleted`);
    sendNoContent(res);
  });

  const events = (method: 'GET' | 'POST'): AgentRoute =>
    route(method, EVENTS, (req, res, c) => {
      const s = session(req);
      followLog(req, res, c.options.keepAliveMs, s.log, 'this session');
    });

  const postMessage = route('POST', MESSAGES, async (req, res, c) => {
    const s = session(req);
    const body = jsonObject((await readJsonBody(req, c)).json, '{"text": "…"}');
    s.send(nonEmptyString(body, 'text', '{"text": "…"}'));
    res.statusCode = 202;
    res.setHeader('Cache-Control', 'no-store');
    res.end();
  });

  const decide = route('POST', APPROVAL, async (req, res, c) => {
    const s = session(req);
    const callId = req.params.callId ?? '';
    const shape = '{"decision": "allow" | "deny" | "allow_session", "signature": "<base64url>", "note"?: "…"}';
    const body = jsonObject((await readJsonBody(req, c)).json, shape);
    if (!DECISIONS.includes(body.decision as Decision)) throw invalid(`"decision" must be "allow", "deny" or "allow_session": ${shape}.`);
    // A denial's reason, for the model (never part of what a device signs: it decides nothing).
    if (body.note !== undefined && (typeof body.note !== 'string' || body.note.length > MAX_NOTE)) throw invalid(`"note" must be a string of at most ${MAX_NOTE} characters: ${shape}.`);
    await requireSignature(
      req,
      c,
      body,
      () => {
        const pending = s.gate.get(callId);
        if (!pending) throw notPending();
        return approvalMessage(s.id, callId, body.decision as Decision, pending.digest);
      },
      { what: 'A decision', nothing: 'nothing was decided', bad: 'The signature does not match this call, this decision and what its card shows, with this phone\'s key' },
    );
    try {
      s.decide(callId, body.decision as Decision, body.note as string | undefined);
    } catch (err) {
      if (err instanceof NotPendingError) throw notPending();
      throw err;
    }
    sendNoContent(res);
  });

  const listAgents = route('GET', AGENT_AGENTS_PATH, async (_req, res) => {
    const list = folders();
    sendJson(res, 200, { agents: await catalog.list(list.find((w) => w.absolutePath !== undefined)?.absolutePath) });
  });

  // The agent's mode or model (ACP agents that offer a choice): the session screen's picker.
  const choose = (what: 'mode' | 'model', pattern: string): AgentRoute =>
    route('POST', pattern, async (req, res, c) => {
      const s = session(req);
      const shape = `{"${what}": "<an id from the session's ${what}s event>", "signature": "<base64url>", "issuedAt": "<ISO 8601 UTC>"}`;
      const body = jsonObject((await readJsonBody(req, c)).json, shape);
      const id = nonEmptyString(body, what, shape);
      await requireSignedAction(req, c, body, what, s, [id], { what: `A ${what} change`, nothing: 'nothing was changed', bad: `The signature does not match this ${what} on this session with this phone's key` });
      try {
        await s.choose(what, id);
      } catch (err) {
        if (err instanceof EngineOptionError) throw invalid(err.message);
        throw err;
      }
      logger.info(`agent ${s.id.slice(0, 8)}: ${what} set to ${JSON.stringify(id)}`);
      sendNoContent(res);
    });

  /** A worktree session's own, never while it works: Merge runs through the gate, Discard removes the worktree. */
  const worktreeOf = (s: AgentSession): NonNullable<AgentSession['worktree']> => {
    if (!s.worktree) throw invalid('This session has no worktree of its own (start one with "worktree": true).');
    if (s.busy) throw new HttpError(409, 'agent.busy', 'The session is working; stop it or wait until it is idle.');
    return s.worktree;
  };

  const merge = route('POST', MERGE, async (req, res, c) => {
    const s = session(req);
    worktreeOf(s);
    await signedAction(req, c, 'merge', s, '{"signature": "<base64url>", "issuedAt": "<ISO 8601 UTC>"}');
    const w = worktreeOf(s);
    const project = folders().find((f) => f.name === s.folder);
    if (!project) throw notFound();
    const command = mergeCommand(w, s.id.slice(0, 8));
    void s.runAsked('merge', command, project).catch((err: unknown) => logger.error(`agent ${s.id.slice(0, 8)}: merge failed unexpectedly: ${err instanceof Error ? err.name : typeof err}`));
    sendJson(res, 202, { command, into: w.into ?? null });
  });

  const discard = route('POST', DISCARD, async (req, res, c) => {
    const s = session(req);
    worktreeOf(s);
    await signedAction(req, c, 'discard', s, '{"signature": "<base64url>", "issuedAt": "<ISO 8601 UTC>"}');
    const w = worktreeOf(s);
    store.delete(s.id);
    try {
      await removeWorktree(w, gitEnv());
    } catch (err) {
      if (err instanceof WorkspaceError) throw new HttpError(500, 'server.internal_error', `The session is gone but its worktree could not be removed: ${err.message}`);
      throw err;
    }
    logger.info(`agent ${s.id.slice(0, 8)}: worktree ${w.branch} discarded`);
    sendNoContent(res);
  });

  /** The session's changes (the phone's Changes view): each file's diff, and all of them as one. */
  const listChanges = async (s: AgentSession) => {
    changes.prune((id) => store.get(id) !== undefined);
    const files = (await changes.of(s.id)?.list()) ?? [];
    return { files, diff: files.map((f) => f.diff).join('') };
  };

  const getChanges = route('GET', CHANGES, async (req, res) => sendJson(res, 200, await listChanges(session(req))));

  // Undo asks no approval (it takes back only what the session did) but is a write: signed.
  const undo = route('POST', UNDO, async (req, res, c) => {
    const s = session(req);
    const shape = '{"path": "<a path GET …/changes lists>", "digest": "<its digest>", "signature": "<base64url>", "issuedAt": "<ISO 8601 UTC>"}';
    const body = jsonObject((await readJsonBody(req, c)).json, shape);
    const path = normalPath(nonEmptyString(body, 'path', shape));
    const digest = nonEmptyString(body, 'digest', shape);
    await requireSignedAction(req, c, body, 'undo', s, [path, digest], { what: 'An undo', nothing: 'nothing was changed', bad: 'The signature does not match this file and what its diff shows, with this phone\'s key' });
    const tracked = changes.of(s.id);
    try {
      if (!tracked) throw new NotChangedError();
      await tracked.undo(path, digest);
    } catch (err) {
      if (err instanceof NotChangedError) throw new HttpError(404, 'agent.not_found', `This session has no change to ${path} to undo (never changed, or already undone).`);
      if (err instanceof ChangedOutsideError) throw changedOutside(path);
      if (err instanceof WorkspaceError) throw new HttpError(409, 'agent.changed_outside', err.message);
      throw err;
    }
    // Every screen marks the session's edits to it reverted, and the model is told.
    for (const change of s.changes) if (!change.reverted && normalPath(change.path) === path) s.reverted(change.callId);
    logger.info(`agent ${s.id.slice(0, 8)}: a change undone from the phone`);
    sendJson(res, 200, await listChanges(s));
  });

  const stop = route('POST', STOP, (req, res) => {
    const s = session(req);
    s.stop();
    logger.info(`agent ${s.id.slice(0, 8)}: stopped by the user`);
    sendNoContent(res);
  });

  return {
    // GET is the issue's; POST is the same stream for quick tunnels, which hold a GET event stream until it closes.
    routes: [listFolders, listFiles, createSession, listSessions, getSession, deleteSession, events('GET'), events('POST'), postMessage, decide, stop, listAgents, choose('mode', MODE), choose('model', MODEL), merge, discard, getChanges, undo],
    // What a session was doing when the relay stopped is what it comes back as: the stop (and the
    // chats' cancelling before it) is not saved.
    async beforeStop() {
      await loading;
      await store.unkeep();
    },
    async stop() {
      await store.closeAll();
      await host?.stop?.();
    },
  };
};

/** Paths containing `q` (lower case), those whose file name holds it first, then the shorter. */
function rankFiles(files: readonly string[], q: string): string[] {
  const hits = files.filter((f) => f.toLowerCase().includes(q));
  const inName = (f: string) => (f.slice(f.lastIndexOf('/') + 1).toLowerCase().includes(q) ? 0 : 1);
  return hits.sort((a, b) => inName(a) - inName(b) || a.length - b.length || (a < b ? -1 : 1));
}
