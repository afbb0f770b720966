/*
 * The API's names and codes the pages use: console-assets.ts serves them as plain data, made from this
 * module's values at startup, so the console writes none of them again.
 */
export * from '../src/console/console-constants.js'
