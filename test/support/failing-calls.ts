import type { Test } from 'tap';

/**
 * Makes the next `times` calls of `target[method]` throw, as a lost connection would; restored when
 * `t` ends.
 */
export function failNextCalls<T extends object>(t: Test, target: T, method: keyof T & string, times = 1): void {
  const original = target[method] as (...args: unknown[]) => Promise<unknown>;
  t.teardown(() => Object.assign(target, { [method]: original }));
  let failures = times;
  Object.assign(target, {
    [method]: async (...args: unknown[]) => {
      if (failures > 0) {
        failures -= 1;
        throw new Error(`${method}: Connection terminated unexpectedly`);
      }
      return original.apply(target, args);
    },
  });
}
