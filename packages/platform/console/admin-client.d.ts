/*
 * The admin client the CLI uses too, as the console loads it: console-assets.ts serves the compiled
 * module beside the console's own, so its types are the client's.
 */
export * from '../src/admin-client/admin-client.js'
