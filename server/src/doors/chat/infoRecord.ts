export const SERVICE_NAME = 'deskrelay';

/** SPEC §2.1: best effort from the environment, then a fixed fallback. */
export function hostname(env: NodeJS.ProcessEnv = process.env): string {
  return env.HOSTNAME || env.COMPUTERNAME || `${SERVICE_NAME}-desktop`;
}

export interface InfoRecord {
  service: string;
  version: string;
  hostname: string;
  providerConfigured: boolean;
  workspaces: number;
}
