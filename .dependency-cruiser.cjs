/**
 * Dependencies run one way: `npm run lint` fails on a cycle between modules, or between folders (the
 * features of a package, and the packages themselves). It reads the compiled modules, as Node loads
 * them: an `import type` (erased by the compiler) is no dependency at run time.
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
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Tests reach across features on purpose: they exercise the platform whole.
    exclude: { path: ['\\.test\\.', 'node_modules'] },
  },
}
