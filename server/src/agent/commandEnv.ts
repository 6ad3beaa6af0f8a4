/**
 * The environment an agent's command runs with: the user's own (a build needs PATH, HOME, the
 * toolchain's variables), minus what is DeskRelay's or a credential. A command the phone asked
 * for must not read the relay's token location or a provider key and print it back into the
 * model's context (and from there to the phone). Dropped: every DESKRELAY_* variable, the tunnel
 * agents' secrets, every name the provider config reads a key from, and anything whose name
 * says it is a key, token, secret or password.
 */
const SECRET_NAME = /(^|_)(API_?KEY|KEY|TOKEN|AUTHTOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$/i;
const OWN = /^DESKRELAY_/i;
const NAMED = new Set(['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'OPENROUTER_API_KEY', 'TUNNEL_TOKEN', 'NGROK_AUTHTOKEN', 'TS_AUTHKEY']);

export function commandEnv(source: NodeJS.ProcessEnv, keyNames: readonly string[] = []): NodeJS.ProcessEnv {
  const drop = new Set([...NAMED, ...keyNames].map((n) => n.toUpperCase()));
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || OWN.test(name) || SECRET_NAME.test(name) || drop.has(name.toUpperCase())) continue;
    out[name] = value;
  }
  return out;
}
