/** The workspace agent's wire types (docs/agent.md, CONTRACT §9): its sessions, approvals and choices. */

/** The workspace agent's door (docs/agent.md). */
export const AGENT_PATHS = /* @__PURE__ */ Object.freeze({
  agentFolders: '/v1/agent/folders',
  agentFiles: '/v1/agent/files',
  agentAgents: '/v1/agent/agents',
  agentSessions: '/v1/agent/sessions',
  agentSession: '/v1/agent/sessions/:id',
  agentEvents: '/v1/agent/sessions/:id/events',
  agentMessages: '/v1/agent/sessions/:id/messages',
  agentApproval: '/v1/agent/sessions/:id/approvals/:callId',
  agentStop: '/v1/agent/sessions/:id/stop',
  agentMode: '/v1/agent/sessions/:id/mode',
  agentModel: '/v1/agent/sessions/:id/model',
  agentMerge: '/v1/agent/sessions/:id/merge',
  agentDiscard: '/v1/agent/sessions/:id/discard',
  agentChanges: '/v1/agent/sessions/:id/changes',
  agentUndo: '/v1/agent/sessions/:id/changes/undo',
});

/** The workspace agent's session states. */
export type AgentStatus = 'running' | 'waiting' | 'idle' | 'stopped' | 'failed';

/** What a phone may answer an approval with. */
export type Decision = 'allow' | 'deny' | 'allow_session';
export const DECISIONS: readonly Decision[] = /* @__PURE__ */ Object.freeze(['allow', 'deny', 'allow_session']);
/** The most characters a denial's `note` (its reason, for the model) may have. */
export const MAX_NOTE = 2000;

/** What an approval card shows, and so what its `digest` covers: the command, or the diff, or the JSON of the input. */
export interface ApprovalShown {
  input: Record<string, unknown>;
  diff?: string;
  command?: string;
}

/**
 * The exact text an approval card shows: `command` for a command, `diff` for an edit or a write,
 * `JSON.stringify(input)` for any other tool. A decision is about this text and nothing else; a
 * device's signature covers its digest (CONTRACT §9). `typeof`, not `??`: the phone reads the
 * approval from the network.
 */
export function approvalShows(a: ApprovalShown): string {
  if (typeof a.command === 'string') return a.command;
  if (typeof a.diff === 'string') return a.diff;
  return JSON.stringify(a.input);
}

/** An approval waiting for the user, as events and snapshots carry it. */
export interface PendingApproval extends ApprovalShown {
  /** The relay's id of the call (never the model's): unique within the session. */
  callId: string;
  tool: string;
  /** Lowercase hex SHA-256 of the UTF-8 bytes of what the card shows (CONTRACT §9). */
  digest: string;
  /** Why this asks although something like it was allowed before (a grant ended). */
  reason?: string;
}

/** The exact text a decision's signature covers (CONTRACT §9): the session, the call, the decision and the digest of what its card showed. */
export const approvalMessage = (sessionId: string, callId: string, decision: Decision, digest: string): string =>
  `deskrelay-approval:v1\n${sessionId}\n${callId}\n${decision}\n${digest}`;

/**
 * The other writes a phone signs besides decisions (docs/devices.md), each over its own string:
 * the session, `subject` (the path and digest for undo, the chosen id for mode and model) and
 * when it was signed. A decision names its one card; these can be asked again, so the relay
 * takes each signed one once, within PROOF_WINDOW_MS of its clock: a captured one sent again
 * does nothing.
 */
export type SignedAction = 'undo' | 'discard' | 'merge' | 'delete' | 'mode' | 'model';

/** The exact text a signed action's signature covers; `issuedAt` is ISO 8601 UTC (`Date.toISOString`). */
export const actionMessage = (action: SignedAction, sessionId: string, issuedAt: string, ...subject: string[]): string =>
  [`deskrelay-${action}:v2`, sessionId, ...subject, issuedAt].join('\n');

/** What a signed action's body carries besides its own fields (none without a key: a relay that wants them says so). */
export interface ActionSignature {
  signature?: string;
  issuedAt?: string;
}

/** `POST /v1/agent/sessions/:id/approvals/:callId`. `signature` is base64url over the approval's signed text (CONTRACT §9). */
export interface DecisionBody {
  decision: Decision;
  signature?: string;
  /** A denial's reason, for the model; never part of what is signed. */
  note?: string;
}

/** One entry of `GET /v1/agent/sessions`. */
export interface AgentSessionSummary {
  id: string;
  /** Which agent runs it (a relay before ACP agents says nothing: DeskRelay's own). */
  agent?: string;
  folder: string;
  title: string;
  status: AgentStatus;
  /** How many approvals wait. */
  pending: number;
  updatedAt: string;
  /** The project's instructions file the session's system prompt carries (`AGENTS.md`…). */
  instructions?: string;
  /** The session's own git worktree: its branch and the project branch Merge merges into. */
  worktree?: { branch: string; into?: string };
}

/** One folder of `GET /v1/agent/folders`. */
export interface AgentFolder {
  name: string;
  /** Where it is on the desktop, for showing. */
  path?: string;
}

/** An MCP server the desktop's agent uses (CLI config "mcpServers"), and whether it works. */
export interface ToolServer {
  name: string;
  ok: boolean;
  error?: string;
}

/** `GET /v1/agent/folders`. */
export interface AgentFoldersAnswer {
  folders: AgentFolder[];
  toolServers?: ToolServer[];
}

/** `GET /v1/agent/files?folder=&q=`: the composer's `@` suggestions. */
export interface AgentFilesAnswer {
  folder: string;
  files: string[];
  truncated: boolean;
}

/** `POST /v1/agent/sessions`. */
export interface AgentSessionRequest {
  prompt: string;
  folder?: string;
  agent?: string;
  worktree?: boolean;
}

/** The answer to `POST /v1/agent/sessions` (201). */
export interface AgentSessionCreated {
  id: string;
  folder: string;
  agent: string;
  worktree?: { branch: string; path: string; into?: string };
}

/** One step of an ACP agent's plan, as its checklist shows it. */
export interface AgentPlanEntry {
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
  priority?: 'high' | 'medium' | 'low';
}

/** A `/` command an ACP agent offers: sent as a message starting with `/name`. */
export interface AgentCommand {
  name: string;
  description: string;
  /** What to type after the name, when it takes input. */
  hint?: string;
}

/** A mode or model an ACP agent offers. */
export interface AgentChoice {
  id: string;
  name: string;
  description?: string;
  /** A mode in which the agent acts without asking: shown, but chosen only at the desk. */
  unasked?: true;
}

/** One entry of `GET /v1/agent/agents`: the agents a session may run. */
export interface AgentInfo {
  id: string;
  name: string;
  available: boolean;
  /** Why it is not available, and how to make it so. */
  reason?: string;
}

/** One file in `GET /v1/agent/sessions/<id>/changes` (docs/agent.md): the session's change to it as one diff. */
export interface AgentFileChange {
  path: string;
  kind: 'created' | 'modified' | 'deleted';
  /** From before the session's first change to the file to after its last. */
  diff: string;
  /** Lowercase hex SHA-256 of `diff`: what an Undo signs. */
  digest: string;
  /** The file is no longer as the session left it: Undo is refused (409 agent.changed_outside). */
  changedOutside: boolean;
  /** Why Undo cannot put this file back (its contents were too large to keep across a restart); absent when it can. */
  notUndoable?: string;
}

/** `GET /v1/agent/sessions/<id>/changes` and the answer of `POST …/changes/undo`. */
export interface AgentChanges {
  files: AgentFileChange[];
  /** Every file's diff, one after another. */
  diff: string;
}
