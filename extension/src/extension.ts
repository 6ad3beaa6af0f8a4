import * as vscode from 'vscode';

export function activate(context: vscode.ExtensionContext): void {
  const out = vscode.window.createOutputChannel('DeskRelay');
  context.subscriptions.push(out, vscode.commands.registerCommand('deskrelay.showLog', () => out.show(true)));
}

export function deactivate(): void {}
