import FindMyWay from 'find-my-way';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Whether `pattern` has a literal segment where `other` has a `:param`, first from the left (the router's own precedence). */
function outranks(pattern: string, other: string): boolean {
  const segments = pattern.split('/');
  const otherSegments = other.split('/');
  for (const [index, segment] of segments.entries()) {
    const isParam = segment.startsWith(':');
    const otherIsParam = otherSegments[index]?.startsWith(':') ?? false;
    if (isParam !== otherIsParam) return !isParam;
  }
  return false;
}

/**
 * Every route pattern by method, to name the methods a path allows (405, api-contract 1). The router
 * matches per method, so `GET .../documents/batch`, for which only `POST .../documents/batch` exists,
 * reached `GET .../documents/:id` with id "batch" (a 400 about a UUID). A path belongs to its most
 * literal pattern: a `:param` pattern another method's literal segment outranks does not answer it.
 */
export class AllowedMethods {
  private readonly router = FindMyWay({ ignoreTrailingSlash: true });
  private readonly patterns = new Set<string>();
  private readonly shadowed = new Map<string, boolean>();

  add(method: string, pattern: string): void {
    if (!(METHODS as readonly string[]).includes(method)) return;
    this.patterns.add(pattern);
    this.shadowed.clear();
    try {
      this.router.on(method as 'GET', pattern, () => undefined, { pattern });
    } catch {
      // The same method and path registered twice is Fastify's error to report, not ours.
    }
  }

  /**
   * Whether some path `pattern` matches may belong to a more literal pattern (`.../documents/:id`
   * and `.../documents/batch`), remembered per pattern: most requests (a query on
   * `/v1/collections/:name/query`) then cost one lookup, not a router search per method.
   */
  mayBeShadowed(pattern: string): boolean {
    let answer = this.shadowed.get(pattern);
    if (answer === undefined) {
      const segments = pattern.split('/');
      answer = [...this.patterns].some((other) => {
        const otherSegments = other.split('/');
        return otherSegments.length === segments.length && outranks(other, pattern)
          && segments.every((segment, index) => segment === otherSegments[index] || segment.startsWith(':'));
      });
      this.shadowed.set(pattern, answer);
    }
    return answer;
  }

  /** The methods that answer `path`, each with the pattern it reaches there. */
  at(path: string): Array<{ method: string; pattern: string }> {
    const matches = METHODS.flatMap((method) => {
      const found = this.router.find(method, path);
      return found ? [{ method, pattern: (found.store as { pattern: string }).pattern }] : [];
    });
    return matches.filter((match) => !matches.some((other) => outranks(other.pattern, match.pattern)));
  }
}
