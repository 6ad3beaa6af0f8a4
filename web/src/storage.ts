/**
 * Web Storage, best effort: a browser may disable it (private mode, policy), and then memory is
 * enough for the page to work.
 */
export interface KeyValueStore {
  read(key: string): unknown;
  write(key: string, value: unknown): boolean;
  remove(key: string): void;
}

function store(get: () => Storage): KeyValueStore {
  return {
    read(key) {
      try {
        const raw = get().getItem(key);
        return raw === null ? null : (JSON.parse(raw) as unknown);
      } catch {
        return null;
      }
    },
    write(key, value) {
      try {
        get().setItem(key, JSON.stringify(value));
        return true;
      } catch {
        return false;
      }
    },
    remove(key) {
      try {
        get().removeItem(key);
      } catch {
        /* storage disabled: nothing was kept */
      }
    },
  };
}

/** This tab only: gone when the tab closes. */
export const sessionStore = store(() => sessionStorage);
/** This phone, until removed. */
export const localStore = store(() => localStorage);
