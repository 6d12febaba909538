/**
 * The transpiler tap's ts-node uses for the suite (tsconfig.json, "ts-node"."transpiler"): sucrase
 * strips the types and leaves everything else, on the same lines, so coverage lines are the
 * source's. npm run typecheck checks the types.
 */
const { transform } = require('sucrase');

exports.create = function create() {
  return {
    transpile(input, { fileName }) {
      const { code, sourceMap } = transform(input, {
        transforms: ['typescript'],
        disableESTransforms: true,
        filePath: fileName,
        sourceMapOptions: { compiledFilename: fileName },
      });
      return { outputText: code, sourceMapText: JSON.stringify(sourceMap) };
    },
  };
};
