import * as vscode from 'vscode';

/** Disposes every item, last registered first. */
export function disposeAll(items: vscode.Disposable[]): void {
  while (items.length) items.pop()?.dispose();
}

/** Base for objects that own VS Code resources: register them once, release them all in dispose(). */
export abstract class Disposable implements vscode.Disposable {
  private disposed = false;
  private readonly owned: vscode.Disposable[] = [];

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    disposeAll(this.owned);
  }

  protected get isDisposed(): boolean {
    return this.disposed;
  }

  /** Takes ownership of `item`; disposes it at once when this object is already gone. */
  protected register<T extends vscode.Disposable>(item: T): T {
    if (this.disposed) item.dispose();
    else this.owned.push(item);
    return item;
  }
}
