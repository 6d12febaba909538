/**
 * The chain of headings above the current position while a parser walks a document, so every
 * element can carry its `headingPath` (outermost first).
 *
 * Convention for every parser: a heading's own headingPath holds only the headings above it, not
 * itself (so "## Install" under "# Guide" has ["Guide"]); the elements after it get
 * ["Guide", "Install"]. A heading closes every open heading of the same or a deeper level, so a
 * skipped level (h1 then h3) still nests and a later h2 replaces the h3.
 */
/** Whether `path` (a chunk's `heading_path` metadata, or any value) is the heading path `other`. */
export function sameHeadingPath(path: unknown, other: readonly string[]): boolean {
  return Array.isArray(path) && path.length === other.length && path.every((heading, index) => heading === other[index]);
}

export class HeadingTrail {
  private readonly open: Array<{ level: number; text: string }> = [];

  /** headingPath for an element at the current position. */
  get path(): string[] {
    return this.open.map((heading) => heading.text);
  }

  /** Records a heading; returns the headingPath the heading element itself carries. */
  enter(level: number, text: string): string[] {
    while (this.open.length > 0 && this.open[this.open.length - 1].level >= level) this.open.pop();
    const pathAbove = this.path;
    this.open.push({ level, text });
    return pathAbove;
  }
}
