/**
 * The devices door's routes for the desk only: they take the desk token, which only the desktop's
 * own processes (the CLI, the editor) read from the config dir, never a phone. A file of their own
 * so the phone's bundle does not carry them.
 */
export const DESK_PATHS = /* @__PURE__ */ Object.freeze({
  /** POST: a new one-time pairing code (`deskrelay pair`). */
  deviceCodes: '/v1/devices/codes',
  /** PUT `{"allowed"}`: the device may drive the agent, or not. */
  deviceAgent: '/v1/devices/:id/agent',
});
