/**
 * The wire protocol between the relay and its clients, in one place: the relay's doors and the
 * phone web client (web/src) both import it, so they cannot drift apart. Every path of every
 * door, every error code, every event and request/response type, and the conversation export.
 * Pure: no Node imports, nothing that runs on import; types cost the browser bundle nothing, and
 * web/src imports values from the subject files (paths.ts, devices.ts…), not from here, so that
 * each screen's bundle carries only its doors' paths. The ground floor of server/src: it imports nothing else.
 */
import { AGENT_PATHS } from './agent';
import { CONVERSATION_PATHS } from './conversations';
import { DESK_PATHS } from './desk';
import { DEVICE_PATHS } from './devices';
import { OLLAMA_PATHS, OPENAI_PATHS } from './chat';
import { CHAT_PATHS, PROVIDER_PATHS } from './paths';
import { PUSH_PATHS } from './push';

export * from './agent';
export * from './chat';
export * from './conversations';
export * from './desk';
export * from './devices';
export * from './errors';
export * from './events';
export * from './markdown';
export * from './paths';
export * from './push';
export * from './registration';

/** Every path of every door (each door's in its subject's file). The web client imports the doors' own objects instead, from their files. */
// A pure call around the spreads: a bundler may then drop it where unused.
export const PATHS = /* @__PURE__ */ (() => Object.freeze({ ...CHAT_PATHS, ...OPENAI_PATHS, ...OLLAMA_PATHS, ...PROVIDER_PATHS, ...PUSH_PATHS, ...DEVICE_PATHS, ...DESK_PATHS, ...AGENT_PATHS, ...CONVERSATION_PATHS }))();
export type PathName = keyof typeof PATHS;

