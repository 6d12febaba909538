export const TRANSPILE_CACHE_DIRECTORY: string;
export const TRANSPILED_FILE_LIFETIME_MS: number;
export function pruneTranspileCache(directory?: string, lifetimeMs?: number, now?: number): Promise<number>;
