/**
 * `--dimension=N` of the quality benchmarks: the collection's vector size instead of the
 * embedder's default, so the `local` embedder's hashing can be measured at several sizes.
 */
export function dimensionArgument(argv: readonly string[]): number | undefined {
  const argument = argv.find((value) => value.startsWith('--dimension='));
  if (argument === undefined) return undefined;
  const dimension = Number(argument.slice('--dimension='.length));
  if (!Number.isInteger(dimension) || dimension < 1) throw new Error(`--dimension must be a positive integer, got ${argument}`);
  return dimension;
}

/** What a result file's name ends in: nothing at the default dimension. */
export function dimensionSuffix(dimension: number | undefined): string {
  return dimension === undefined ? '' : `-dimension-${dimension}`;
}
