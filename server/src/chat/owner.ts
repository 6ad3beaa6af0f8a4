import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The device a chat is started for (issue 26), or undefined for the pairing token. The funnel
 * runs each admitted request's handler inside `chatOwner.run(device, …)` and the chat service
 * reads it when a slot is taken, so every door, present or future, counts its chats per device
 * and has them ended when the device is removed, without passing the device through its own
 * code (a door that forgot to would let a revoked phone keep its stream).
 */
export const chatOwner = new AsyncLocalStorage<string | undefined>();
