/**
 * The environment an agent's command runs with: the user's own (a build needs PATH, HOME, the
 * toolchain's variables), minus what is DeskRelay's or may be a credential. A command the phone
 * asked for must not read the relay's token location or a key and print it back into the
 * model's context (and from there to the phone). A name rule errs on the side of dropping: a
 * variable a build needed and lost is one line of config (`pass`); a token that leaked is not.
 */
const CREDENTIAL_WORD = /KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|PAT|PRIVATE|SESSION|COOKIE/i;
/** A URL carrying a password (`scheme://user:pw@host`, the user possibly empty), anywhere in a value. */
const URL_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^/?#\s@:]*:[^/?#\s]*@/i;
const OWN = /^DESKRELAY_/i;
/** Provider keys and tunnel secrets by name: dropped whatever `pass` says. */
const NAMED = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'OPENROUTER_API_KEY', 'TUNNEL_TOKEN', 'NGROK_AUTHTOKEN', 'TS_AUTHKEY'];
/** Windows' executable extensions: a command line needs them, and its PAT is no token. */
const BUILT_IN_PASS = ['PATHEXT'];

export interface CommandEnvRules {
  /** Variables holding provider keys (the config's apiKeyEnv): always dropped. */
  keyNames?: readonly string[];
  /** Names kept although the rule would drop them (config `agent.env.pass`). */
  pass?: readonly string[];
  /** Names dropped besides (config `agent.env.drop`). */
  drop?: readonly string[];
}

/** True when a variable's name or value marks it as a possible credential. */
export function looksSecret(name: string, value: string): boolean {
  // PATH and its kin (MANPATH, LD_LIBRARY_PATH, PYTHONPATH) end in PATH: that PAT is no token.
  return CREDENTIAL_WORD.test(name.replace(/PATH$/i, '')) || URL_PASSWORD.test(value);
}

export function commandEnv(source: NodeJS.ProcessEnv, rules: CommandEnvRules = {}): NodeJS.ProcessEnv {
  const upper = (names: readonly string[] | undefined) => new Set((names ?? []).map((n) => n.toUpperCase()));
  const always = upper([...NAMED, ...(rules.keyNames ?? [])]);
  const pass = upper([...BUILT_IN_PASS, ...(rules.pass ?? [])]);
  const drop = upper(rules.drop);
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    const key = name.toUpperCase();
    if (OWN.test(name) || always.has(key) || drop.has(key)) continue;
    if (!pass.has(key) && looksSecret(name, value)) continue;
    out[name] = value;
  }
  return out;
}
