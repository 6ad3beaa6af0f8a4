export type { AgentHost } from './host';
export { DEFAULT_LIMITS, type AgentLimits } from './limits';
export { NodeWorkspace, shortPath, type NodeWorkspaceOptions } from './hosts/node';
export { commandEnv } from './commandEnv';
export { globToRegExp, isDenied, relativeInside } from './paths';
export { WorkspaceError } from './workspace';
export type * from './workspace';
