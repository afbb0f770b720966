/**
 * Dependencies run one way: `npm run lint` fails on a cycle between modules, or between folders (the
 * features of a package, and the packages themselves). `check:dependencies` reads the compiled modules, as
 * Node loads them; scripts/check-type-cycles.mjs applies the same rules to the sources with their
 * `import type` counted.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A module never reaches itself again through its imports.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular-folders',
      comment: 'Folders (the features of a package, and the packages) depend on each other one way only.',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'composition-root-on-top',
      comment:
        "The platform's composition root (platform, index, internal) imports the features, and no feature imports it back: only the CLI, which starts it.",
      severity: 'error',
      from: { path: '^packages/platform/(src|dist)/[^/]+/', pathNot: '^packages/platform/(src|dist)/cli/' },
      to: { path: '^packages/platform/(src|dist)/(platform|index|internal)\\.js$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Tests reach across features on purpose: they exercise the platform whole. The CLIs' bundles
    // (dist/bundle/) are the same modules again, made into one file.
    exclude: { path: ['\\.test\\.', '/test/', 'node_modules', '/dist/bundle/'] },
  },
}
