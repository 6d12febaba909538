/** Asks `condition` every 20 ms until it holds; throws after `timeoutMs` naming `what`. */
export async function waitUntil(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    if (await condition()) return;
    if (waited > timeoutMs) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
