/**
 * The relay's public face: what its hosts (the VS Code extension, the CLI, embedding code) may
 * use. Hosts import this file, never a deep path, so the folders behind it can change freely.
 */
export type { Logger } from './logger';
export { consoleLogger, silentLogger } from './logger';
export { DEFAULT_HOST, DEFAULT_PORT, RelayServer, RelayStartError, type RelayOptions, type RequestLogEntry } from './session/relay';
export { isLoopbackHost, isLoopbackUrl, LOOPBACK_WARNING, pairingPayload, webClientLink } from './session/pairing';
export { describeProvider, validateProviderConfig } from './providers';
export type {
  ActiveProvider,
  AdapterDeps,
  AdapterFactories,
  AdapterFactory,
  ChatAdapter,
  ChatMessage,
  FinishReason,
  KeySource,
  PieceSink,
  ProviderConfig,
  ProviderKind,
  ProviderSource,
  TranscriptionChoice,
  ToolCall,
  ToolChoice,
  ToolOptions,
  ToolSpec,
} from './providers/types';
export { isAbortError, ProviderError } from './providers';
export { MAX_TOOL_ARGUMENT_CHARS } from './providers/framing';
export { listModels } from './providers';
export { detectRunners, LOCAL_RUNNERS, RUNNER_PORTS_VARIABLE, runnerConfig, runnersToProbe, runnerUrl, type DetectedRunner, type LocalRunner } from './providers/detect';
export { RelaySession } from './session/relaySession';
export { configDir } from './session/paths';
export { devicesPath, forgetRememberedDevices, type DeviceChange, type DeviceSummary } from './store/devices';
export type { AgentEvent, AgentStatus, DeviceInfo } from './protocol';
export type { Pairing, RelaySessionOptions, SessionStatus } from './session/relaySession';
export {
  cloudflareQuickTunnel,
  findCloudflared,
  forwardUrl,
  installCloudflared,
  QuickTunnel,
  isTunnelKind,
  stopAllTunnelsSync,
  TunnelError,
  tunnelAgentFor,
  tunnelKindInfo,
  tunnelSecretName,
  TUNNEL_KINDS,
} from './tunnel';
export type { ProbeOptions, Tunnel, TunnelAgent, TunnelErrorCode, TunnelHealth, TunnelKind, TunnelKindInfo, TunnelOptions, TunnelSettings, TunnelState } from './tunnel';
export {
  commandEnv,
  DEFAULT_LIMITS as AGENT_DEFAULT_LIMITS,
  globToRegExp,
  isDenied,
  NodeWorkspace,
  relativeInside,
  shortPath,
  findRipgrep,
  WorkspaceError,
  SessionStore,
  AgentSession,
  NotPendingError,
  approvalDigest,
  reverseDiff,
  unifiedDiff,
  parseAcpAgents,
  type AcpAgentConfig,
  type AgentHost,
  type Decision,
  type PendingApproval,
  type AgentLimits,
  type NodeWorkspaceOptions,
} from './agent';
export { runShellCommand } from './agent/hosts/node/command';
export type { AgentTool, PreparedCall } from './agent/tools';
export type { CommandOptions, CommandResult, Diagnostic, DiagnosticsResult, ListOptions, ListResult, SearchOptions, SearchResult, Workspace } from './agent/workspace';
