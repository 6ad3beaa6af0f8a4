// Test only: stand-in chat models for the DeskRelay suite, through VS Code 1.96's `chatProvider`
// proposal (vscode.lm.registerChatModelProvider, provideLanguageModelResponse reporting
// { index, part: LanguageModelTextPart }). Two models:
//   standin/echo     no consent needed (metadata without `auth`)
//   standin/guarded  `auth: true`: another extension needs the user's consent first
// The user's last message steers the reply: "slow" streams a part every 100 ms (for a minute, or until cancelled),
// "fail" throws (the requester sees VS Code's error with this text).
// Tools (VS Code 1.96: the requester's LanguageModelChatRequestOptions reach the provider as
// `options.tools` / `options.toolMode`; a provider reports a call as { index, part:
// LanguageModelToolCallPart(callId, name, input) }, which VS Code hands the requester as a
// LanguageModelToolCallPart in its stream, as extHostLanguageModels.ts $startChatRequest does):
// with tools offered and "use a tool" in the last user text, the reply is the text "Let me check."
// and then one call of the first offered tool with input {"city":"Paris"}; when the last message
// carries a LanguageModelToolResultPart, the reply is "The tool said: <its text>".
// Also a tool, standin_clock ({city}), answering "It is 12:00 in <city>." (the workspace agent offers it).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const vscode = require('vscode');

const REPLY = ['Hello', ' from', ' the', " VS Code", ' stand-in', '!'];

function textOf(message) {
  const parts = Array.isArray(message.content) ? message.content : [message.content];
  return parts.map((p) => (typeof p === 'string' ? p : (p && typeof p.value === 'string' && p.value) || '')).join('');
}

/** The message's parts as plain data, for the suite to check the tool history it received. */
function partsOf(message) {
  const parts = Array.isArray(message.content) ? message.content : [message.content];
  return parts.map((p) => {
    if (typeof p === 'string') return { type: 'text', value: p };
    if (p instanceof vscode.LanguageModelToolCallPart) return { type: 'call', callId: p.callId, name: p.name, input: p.input };
    if (p instanceof vscode.LanguageModelToolResultPart) return { type: 'result', callId: p.callId, text: p.content.map((c) => (c && typeof c.value === 'string' ? c.value : '')).join('') };
    return { type: 'text', value: p && typeof p.value === 'string' ? p.value : '' };
  });
}

function activate() {
  const state = { requests: [], cancelled: 0 };
  const provider = (family) => ({
    async provideLanguageModelResponse(messages, options, extensionId, progress, token) {
      const last = messages.length ? textOf(messages[messages.length - 1]) : '';
      const tools = (options && options.tools) || [];
      state.requests.push({
        family,
        extensionId,
        messages: messages.map((m) => ({ role: m.role, text: textOf(m), parts: partsOf(m) })),
        tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })),
        toolMode: options && options.toolMode,
      });
      if (last.includes('fail')) throw new Error('Stand-in quota exceeded: try again tomorrow.');
      const result = messages.length ? partsOf(messages[messages.length - 1]).find((p) => p.type === 'result') : undefined;
      if (result) {
        progress.report({ index: 0, part: new vscode.LanguageModelTextPart(`The tool said: ${result.text}`) });
        return;
      }
      if (tools.length > 0 && last.includes('use a tool')) {
        progress.report({ index: 0, part: new vscode.LanguageModelTextPart('Let me check.') });
        // Index 0 like the text: VS Code 1.96 gives the requester's `stream` the parts of the first
        // index only (extHostLanguageModels.ts, LanguageModelResponse.handleFragment).
        progress.report({ index: 0, part: new vscode.LanguageModelToolCallPart(`standin-call-${state.requests.length}`, tools[0].name, { city: 'Paris' }) });
        return;
      }
      const slow = last.includes('slow');
      // A slow reply still ends by itself after a minute: VS Code 1.96 does not forward a started
      // request's cancellation to the provider (see 04-providers.test.ts).
      for (let i = 0; slow ? i < 600 : i < REPLY.length; i++) {
        if (token.isCancellationRequested) {
          state.cancelled++;
          return;
        }
        progress.report({ index: 0, part: new vscode.LanguageModelTextPart(slow ? `tick ${i} ` : REPLY[i]) });
        await new Promise((r) => setTimeout(r, slow ? 100 : 5));
      }
    },
    async provideTokenCount(text) {
      return typeof text === 'string' ? text.length : 1;
    },
  });
  const meta = (family, auth) => ({ vendor: 'standin', name: `Stand-in ${family}`, family, version: '1', maxInputTokens: 100000, maxOutputTokens: 1000, ...(auth ? { auth: true } : {}) });
  vscode.lm.registerChatModelProvider('standin-echo', provider('echo'), meta('echo', false));
  vscode.lm.registerChatModelProvider('standin-guarded', provider('guarded'), meta('guarded', true));
  // A tool another extension offers (stable vscode.lm.registerTool, declared in package.json's
  // languageModelTools): the workspace agent offers it to its model too.
  state.toolCalls = [];
  vscode.lm.registerTool('standin_clock', {
    invoke(options) {
      state.toolCalls.push(options.input);
      return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(`It is 12:00 in ${options.input.city}.`)]);
    },
  });
  return state;
}

module.exports = { activate, deactivate() {} };
